//! The PMIx server calls of the restart spawner (`pmix_spawn`): the data service
//! (`PMIx_Publish`, `PMIx_Lookup`), the process tables (`PMIx_Query_info` of
//! `PMIX_QUERY_PROC_TABLE`) and `PMIx_Spawn_nb` of a new incarnation.

use super::pmix::{refused, Pmix};
use super::pmix_ffi::{
    key_array, App, Info, PData, Proc, ProcInfo, Query, Value, PMIX_DATA_ARRAY, PMIX_ERR_NOT_FOUND,
    PMIX_ERR_PARTIAL_SUCCESS, PMIX_INFO, PMIX_PERSIST_FIRST_READ, PMIX_PERSIST_SESSION,
    PMIX_PROC_INFO, PMIX_PROC_STATE_TERMINATED, PMIX_SUCCESS,
};
use super::pmix_spawn::{JOB_VAR, RANK_VAR};
use super::BootstrapError;
use std::ffi::{c_char, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, Mutex};

/// The outcome of a `PMIx_Spawn_nb`, filled by its callback: the new namespace or the
/// server's status.
pub(super) type Outcome = Arc<Mutex<Option<Result<String, i32>>>>;

/// What a spawn passes to the server, kept alive until its callback ran.
pub(super) struct SpawnArgs {
    _strings: Vec<CString>,
    _argv: Vec<*mut c_char>,
    _env: Vec<*mut c_char>,
    _app: Box<App>,
}

/// Names a process state of `pmix_common.h`.
fn state_name(state: u8) -> &'static str {
    match state {
        20 => "terminated",
        51 => "killed by command",
        52 => "aborted",
        53 => "failed to start",
        54 => "aborted by signal",
        55 => "exited without finalizing",
        56 => "communication failed",
        58 => "called abort",
        62 => "exited with a non-zero status",
        63 => "failed to launch",
        _ => "ended",
    }
}

/// A process as its job's process table shows it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seen {
    state: u8,
    pub pid: libc::pid_t,
    /// It runs on this host (its table entry names this host).
    pub local: bool,
}

/// This host's name.
fn this_host() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0)?;
    (rc == 0).then(|| String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// How the process `seen` ended, if it has (`None`: gone from its job's process table,
/// which is an end too). ORTE shows a process that ended normally (it finalized) as
/// `PMIX_PROC_STATE_UNDEF` with its pid, where one not started yet has pid 0.
pub(super) fn ending(seen: Option<Seen>) -> Option<String> {
    match seen {
        None => Some("gone from the PMIx server's process table".into()),
        Some(Seen { state: 0, pid, .. }) if pid > 0 => Some(format!(
            "PMIx process state 0 with pid {pid}: ended normally"
        )),
        Some(Seen { state, .. }) if state >= PMIX_PROC_STATE_TERMINATED => {
            Some(format!("PMIx process state {state}: {}", state_name(state)))
        }
        Some(_) => None,
    }
}

/// The PMIx_Spawn_nb callback: records the outcome.
///
/// # Safety
/// `cbdata` is an `Outcome` given up by `Arc::into_raw`, passed once; `nspace` is NULL
/// or a C string.
unsafe extern "C" fn spawned(status: i32, nspace: *mut c_char, cbdata: *mut c_void) {
    // SAFETY: the reference `spawn` gave up for this one call (contract above).
    let outcome = unsafe { Arc::from_raw(cbdata as *const Mutex<Option<Result<String, i32>>>) };
    let r = if status == PMIX_SUCCESS && !nspace.is_null() {
        // SAFETY: a C string from the server, valid during the callback.
        Ok(unsafe { CStr::from_ptr(nspace) }
            .to_string_lossy()
            .into_owned())
    } else {
        Err(status)
    };
    if let Ok(mut o) = outcome.lock() {
        *o = Some(r);
    };
}

fn cstring(s: impl Into<Vec<u8>>) -> Result<CString, BootstrapError> {
    CString::new(s).map_err(|_| refused("a spawn argument holds a NUL"))
}

/// The variables a restarted process must get from its own launch, not its parent.
fn launcher_variable(name: &[u8]) -> bool {
    const PREFIXES: [&[u8]; 6] = [b"PMIX_", b"OMPI_", b"ORTE_", b"OPAL_", b"PRTE_", b"PRRTE_"];
    PREFIXES.iter().any(|p| name.starts_with(p))
        || [
            b"STEADFAST_GENERATION".as_slice(),
            JOB_VAR.as_bytes(),
            RANK_VAR.as_bytes(),
        ]
        .contains(&name)
}

impl Pmix {
    /// PMIx_Publish of one string, kept for the session; `first_read`: deleted by the
    /// first lookup.
    pub(super) fn publish(&self, key: &str, value: &str, first_read: bool) -> Result<(), String> {
        let k = CString::new(key).map_err(|_| format!("key {key:?} holds a NUL"))?;
        let v = CString::new(value).map_err(|_| format!("value {value:?} holds a NUL"))?;
        let persistence = if first_read {
            PMIX_PERSIST_FIRST_READ
        } else {
            PMIX_PERSIST_SESSION
        };
        let infos = [
            Info::string(&k, &v),
            Info::persistence(c"pmix.persist", persistence),
        ];
        // SAFETY: an array of `len` infos whose strings outlive the call.
        let rc = unsafe { (self.api.publish)(infos.as_ptr(), infos.len()) };
        if rc != PMIX_SUCCESS {
            return Err(format!("PMIx_Publish({key}) failed with status {rc}"));
        }
        Ok(())
    }

    /// PMIx_Lookup of string values, never waiting: each key's value if published.
    pub(super) fn lookup_many(&self, keys: &[String]) -> Result<Vec<Option<String>>, String> {
        let mut data: Vec<PData> = keys
            .iter()
            .map(|k| PData {
                proc_: Proc::new("", 0),
                key: key_array(k.as_bytes()),
                value: Value::undef(),
            })
            .collect();
        // SAFETY: an array of `len` pdata with NUL-terminated keys; no info.
        let rc = unsafe { (self.api.lookup)(data.as_mut_ptr(), data.len(), std::ptr::null(), 0) };
        if rc == PMIX_ERR_NOT_FOUND {
            return Ok(vec![None; keys.len()]);
        }
        if rc == PMIX_ERR_PARTIAL_SUCCESS && keys.len() > 1 {
            // PRRTE fills none of them then: one lookup per key.
            let mut out = Vec::with_capacity(keys.len());
            for k in keys {
                out.extend(self.lookup_many(std::slice::from_ref(k))?);
            }
            return Ok(out);
        }
        if rc != PMIX_SUCCESS {
            return Err(format!("PMIx_Lookup failed with status {rc}"));
        }
        let mut out = Vec::with_capacity(keys.len());
        for d in &mut data {
            out.push(d.value.string());
            if d.value.kind != 0 {
                // SAFETY: a value PMIx filled in; destructed once, not used after.
                unsafe { (self.api.destruct)(&mut d.value) };
            }
        }
        Ok(out)
    }

    /// The state of each process of namespace `nspace` (rank, `pmix_proc_state_t`),
    /// from a query of its process table; a process missing from it has ended (ORTE
    /// forgets a spawned job once its process has exited).
    pub(super) fn proc_states(&self, nspace: &str) -> Result<Vec<(u32, Seen)>, String> {
        let ns = CString::new(nspace).map_err(|_| "a namespace holds a NUL".to_string())?;
        let table = c"pmix.qry.ptable";
        let mut keys = [table.as_ptr() as *mut c_char, std::ptr::null_mut()];
        let mut qualifiers = [Info::string(c"pmix.nspace", &ns)];
        let mut query = Query {
            keys: keys.as_mut_ptr(),
            qualifiers: qualifiers.as_mut_ptr(),
            nqual: 1,
        };
        let mut results: *mut Info = std::ptr::null_mut();
        let mut n = 0usize;
        // SAFETY: one query whose arrays outlive the call; PMIx allocates the results.
        let rc = unsafe { (self.api.query)(&mut query, 1, &mut results, &mut n) };
        if rc == PMIX_ERR_NOT_FOUND {
            // A job whose processes all ended may be forgotten by the server.
            return Ok(Vec::new());
        }
        if rc != PMIX_SUCCESS {
            return Err(format!(
                "PMIx_Query_info(process table of {nspace}) failed with status {rc}"
            ));
        }
        let mut states = Vec::new();
        let host = this_host();
        for i in 0..n {
            // SAFETY: `results` holds `n` infos from the server; each data array holds
            // `size` elements of its type (process infos, or infos holding pointers to
            // process infos: ORTE answers the latter, PRRTE the former).
            unsafe {
                let info = &mut *results.add(i);
                if info.value.kind == PMIX_DATA_ARRAY && !info.value.data.darray.is_null() {
                    let da = &*info.value.data.darray;
                    for j in 0..da.size {
                        let p: *const ProcInfo = match da.kind {
                            PMIX_PROC_INFO => (da.array as *const ProcInfo).add(j),
                            PMIX_INFO => {
                                let inner = &*(da.array as *const Info).add(j);
                                if inner.value.kind != PMIX_PROC_INFO {
                                    continue;
                                }
                                inner.value.data.pinfo
                            }
                            _ => break,
                        };
                        if !p.is_null() {
                            let name = (*p).hostname;
                            let local = !name.is_null()
                                && host.as_deref().is_some_and(|h| {
                                    CStr::from_ptr(name).to_bytes() == h.as_bytes()
                                });
                            states.push((
                                (*p).proc_.rank,
                                Seen {
                                    state: (*p).state,
                                    pid: (*p).pid,
                                    local,
                                },
                            ));
                        }
                    }
                }
                (self.api.destruct)(&mut info.value);
            }
        }
        if !results.is_null() {
            // SAFETY: the array PMIx allocated (PMIX_INFO_FREE after the destructs).
            unsafe { libc::free(results.cast()) };
        }
        Ok(states)
    }

    /// Spawns incarnation `g + 1` of `rank` (attempt `attempt`): this program, its
    /// arguments, working directory and environment (without the launcher's own
    /// variables), told which rank of which job it is.
    pub(super) fn spawn(
        &mut self,
        rank: u32,
        g: u32,
        attempt: u32,
    ) -> Result<(Outcome, SpawnArgs), String> {
        let attempt_key = self.key("attempt", rank, g);
        self.publish(&attempt_key, &attempt.to_string(), false)?;
        let mut strings = Vec::new();
        let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
        let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
        let cmd = cstring(exe.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        let cwd = cstring(cwd.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        let mut argv = Vec::new();
        for a in std::env::args_os() {
            strings.push(cstring(a.as_bytes()).map_err(|e| e.to_string())?);
            argv.push(strings.last().expect("pushed").as_ptr() as *mut c_char);
        }
        argv.push(std::ptr::null_mut());
        let mut vars: Vec<Vec<u8>> = std::env::vars_os()
            .filter(|(k, _)| !launcher_variable(k.as_bytes()))
            .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
            .collect();
        vars.push(format!("STEADFAST_GENERATION={}", g + 1).into_bytes());
        vars.push(format!("{JOB_VAR}={}", self.job).into_bytes());
        vars.push(format!("{RANK_VAR}={rank}").into_bytes());
        if std::env::var_os("STEADFAST_JOB_ID").is_none() {
            // Rank 0's job id names the segments: a restarted rank 0 needs it.
            if let Ok(Some(job)) = super::Bootstrap::lookup(self, 0, "job") {
                if let Ok(b) = <[u8; 8]>::try_from(job.as_slice()) {
                    vars.push(format!("STEADFAST_JOB_ID={:x}", u64::from_le_bytes(b)).into_bytes());
                }
            }
        }
        let mut env = Vec::new();
        for v in vars {
            strings.push(cstring(v).map_err(|e| e.to_string())?);
            env.push(strings.last().expect("pushed").as_ptr() as *mut c_char);
        }
        env.push(std::ptr::null_mut());
        let app = Box::new(App {
            cmd: cmd.as_ptr() as *mut c_char,
            argv: argv.as_mut_ptr(),
            env: env.as_mut_ptr(),
            cwd: cwd.as_ptr() as *mut c_char,
            maxprocs: 1,
            info: std::ptr::null_mut(),
            ninfo: 0,
        });
        strings.push(cmd);
        strings.push(cwd);
        let outcome: Outcome = Arc::new(Mutex::new(None));
        let cb = Arc::into_raw(outcome.clone()) as *mut c_void;
        // SAFETY: one app whose strings and arrays live in `SpawnArgs` until the
        // callback ran (the restart keeps them); `cb` is given up to `spawned`, which
        // takes it back once; if the call fails, no callback runs and it is taken
        // back here.
        let rc = unsafe { (self.api.spawn_nb)(std::ptr::null(), 0, &*app, 1, spawned, cb) };
        if rc != PMIX_SUCCESS {
            // SAFETY: the reference given up above, never passed to a callback.
            drop(unsafe { Arc::from_raw(cb as *const Mutex<Option<Result<String, i32>>>) });
            return Err(format!("PMIx_Spawn_nb failed with status {rc}"));
        }
        Ok((
            outcome,
            SpawnArgs {
                _strings: strings,
                _argv: argv,
                _env: env,
                _app: app,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launchers_variables_are_not_passed_on() {
        assert!(launcher_variable(b"PMIX_RANK"));
        assert!(launcher_variable(b"OMPI_COMM_WORLD_RANK"));
        assert!(launcher_variable(b"STEADFAST_GENERATION"));
        assert!(launcher_variable(JOB_VAR.as_bytes()));
        assert!(!launcher_variable(b"STEADFAST_ROUTE"));
        assert!(!launcher_variable(b"PATH"));
    }
}
