//! PMIx through the system's libpmix (Open MPI's `mpirun`, `srun --mpi=pmix`).
//!
//! The library is loaded at run time (`pmix_ffi`), so steadfast builds and runs where
//! PMIx is absent; only a process launched by a PMIx server needs it. Values travel as
//! byte objects under `steadfast.<key>`. Restarts (`PMIx_Spawn`, the incarnations'
//! namespaces, the failures the server knows of) are in `pmix_spawn`.
//!
//! A restarted process is rank 0 of a namespace of its own (the spawn's), but rank
//! `STEADFAST_PMIX_RANK` of the job it rejoins (`STEADFAST_PMIX_JOB`, the namespace of
//! the first start); it reads every rank's values from the namespace of that rank's
//! current incarnation and publishes its own in its namespace.

use super::pmix_ffi::{
    Api, ByteObject, Info, Proc, Value, ValueData, PMIX_BYTE_OBJECT, PMIX_ERR_NOT_FOUND,
    PMIX_GLOBAL, PMIX_RANK_WILDCARD, PMIX_SUCCESS, PMIX_UINT32,
};
use super::pmix_spawn::{Spawner, JOB_VAR, RANK_VAR};
use super::{Bootstrap, BootstrapError, FailureEvent, Rejoin, SAVED_PREFIX};
use std::ffi::{c_char, CStr, CString};
use std::time::Duration;

/// Largest value accepted from the server.
const MAX_VALUE: usize = 1 << 20;

/// A PMIx client connection.
pub struct Pmix {
    pub(super) api: Api,
    /// This process in its own namespace.
    pub(super) me: Proc,
    /// Its rank in the job (the namespace of the first start).
    rank: u32,
    size: u32,
    generation: u32,
    /// The job's namespace.
    pub(super) job: String,
    pending_commit: bool,
    /// Past the first fence (or restarted): a put is committed at once, as nobody
    /// fences for it.
    commit_each_put: bool,
    pub(super) spawner: Spawner,
}

impl std::fmt::Debug for Pmix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmix")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

// SAFETY: the PMIx client library is thread-safe; the handle holds the process's own
// identity, function pointers and owned bookkeeping, whose raw pointers (a spawn's
// arguments, kept until its callback ran) point into heap data it owns.
unsafe impl Send for Pmix {}

pub(super) fn refused(what: impl Into<String>) -> BootstrapError {
    BootstrapError::Refused(what.into())
}

fn key_of(key: &str) -> Result<CString, BootstrapError> {
    CString::new(format!("steadfast.{key}"))
        .map_err(|_| refused(format!("key {key:?} holds a NUL")))
}

fn env_u32(name: &'static str) -> Result<Option<u32>, BootstrapError> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => v.parse().map(Some).map_err(|_| BootstrapError::BadEnv {
            name,
            why: format!("{v:?} is not a number"),
        }),
    }
}

impl Pmix {
    /// Loads libpmix and initialises the client; in a restarted process (the
    /// variables of `pmix_spawn` set), joins the job it names.
    ///
    /// # Errors
    /// `Refused` when the library is missing or the server refuses; `BadEnv`.
    pub fn from_env() -> Result<Self, BootstrapError> {
        let api = Api::load()?;
        let mut me = Proc::new("", 0);
        // SAFETY: `me` is a valid pmix_proc_t to fill; no info array.
        let rc = unsafe { (api.init)(&mut me, std::ptr::null_mut(), 0) };
        if rc != PMIX_SUCCESS {
            return Err(refused(format!("PMIx_Init failed with status {rc}")));
        }
        let generation = env_u32("STEADFAST_GENERATION")?.unwrap_or(0);
        let restarted = match (std::env::var(JOB_VAR), env_u32(RANK_VAR)?) {
            (Ok(job), Some(rank)) if generation > 0 => Some((job, rank)),
            _ if generation > 0 => {
                return Err(BootstrapError::BadEnv {
                    name: JOB_VAR,
                    why: format!(
                        "STEADFAST_GENERATION is {generation} but {JOB_VAR} and {RANK_VAR} are not both set"
                    ),
                })
            }
            _ => None,
        };
        let (job, rank) = restarted.clone().unwrap_or((me.nspace(), me.rank));
        let mut p = Pmix {
            api,
            me,
            rank,
            size: 0,
            generation,
            job,
            pending_commit: false,
            commit_each_put: restarted.is_some(),
            spawner: Spawner::default(),
        };
        let v = p.get_value(
            &Proc::new(&p.job, PMIX_RANK_WILDCARD),
            c"pmix.job.size",
            None,
        )?;
        // SAFETY: `v` is a value returned by PMIx_Get, live until released below.
        let size = unsafe {
            let size = ((*v).kind == PMIX_UINT32).then(|| (*v).data.uint32);
            p.release(v);
            size
        };
        p.size = size.ok_or_else(|| refused("PMIx job size is not a uint32"))?;
        if p.rank >= p.size {
            return Err(refused(format!(
                "PMIx rank {} not below size {}",
                p.rank, p.size
            )));
        }
        p.start_spawner()?;
        Ok(p)
    }

    /// This process's rank in the job.
    pub(super) fn world_rank(&self) -> u32 {
        self.rank
    }

    /// PMIx_Get of `key` of `proc_`; `NOT_FOUND` is `Ok(None)` when `optional`
    /// (`PMIX_OPTIONAL`: never waits for a value not there yet).
    pub(super) fn get_value(
        &self,
        proc_: &Proc,
        key: &CStr,
        optional: Option<&Info>,
    ) -> Result<*mut Value, BootstrapError> {
        let mut v: *mut Value = std::ptr::null_mut();
        let (info, n) = optional.map_or((std::ptr::null(), 0), |i| (i as *const Info, 1));
        // SAFETY: valid proc, key and info array of `n`; PMIx allocates the value.
        let rc = unsafe { (self.api.get)(proc_, key.as_ptr(), info, n, &mut v) };
        if rc == PMIX_ERR_NOT_FOUND && optional.is_some() {
            return Ok(std::ptr::null_mut());
        }
        if rc != PMIX_SUCCESS || v.is_null() {
            return Err(refused(format!(
                "PMIx_Get({key:?}) from {}.{} failed with status {rc}",
                proc_.nspace(),
                proc_.rank
            )));
        }
        Ok(v)
    }

    /// Frees a value returned by PMIx_Get.
    ///
    /// # Safety
    /// `v` came from PMIx_Get and is not used afterwards.
    pub(super) unsafe fn release(&self, v: *mut Value) {
        // SAFETY: per the contract, `v` is PMIx's heap allocation (PMIX_VALUE_RELEASE).
        unsafe {
            (self.api.destruct)(v);
            libc::free(v.cast());
        }
    }

    /// The byte object `key` of `proc_`: waited for, or (`optional`) `None` if absent.
    fn bytes_of(
        &self,
        proc_: &Proc,
        key: &str,
        optional: bool,
    ) -> Result<Option<Vec<u8>>, BootstrapError> {
        let k = key_of(key)?;
        let opt = Info::flag(c"pmix.optional", true);
        let v = self.get_value(proc_, &k, optional.then_some(&opt))?;
        if v.is_null() {
            return Ok(None);
        }
        // SAFETY: `v` is a live value from PMIx_Get; a byte object's bytes are `size`
        // bytes long; released right after copying.
        unsafe {
            let out = if (*v).kind == PMIX_BYTE_OBJECT && (*v).data.bo.size <= MAX_VALUE {
                let bo = (*v).data.bo;
                if bo.size == 0 {
                    Some(Vec::new())
                } else if bo.bytes.is_null() {
                    None
                } else {
                    Some(std::slice::from_raw_parts(bo.bytes as *const u8, bo.size).to_vec())
                }
            } else {
                None
            };
            self.release(v);
            out.map(Some).ok_or_else(|| {
                refused(format!(
                    "PMIx value {key} of {}.{} is not a byte object",
                    proc_.nspace(),
                    proc_.rank
                ))
            })
        }
    }

    /// Pushes the values put since the last commit to the server.
    pub(super) fn commit(&mut self) -> Result<(), BootstrapError> {
        if self.pending_commit {
            // SAFETY: no arguments.
            let rc = unsafe { (self.api.commit)() };
            if rc != PMIX_SUCCESS {
                return Err(refused(format!("PMIx_Commit failed with status {rc}")));
            }
            self.pending_commit = false;
        }
        Ok(())
    }
}

impl Bootstrap for Pmix {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn generation(&self) -> u32 {
        self.generation
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        let k = key_of(key)?;
        let mut v = Value {
            kind: PMIX_BYTE_OBJECT,
            data: ValueData {
                bo: ByteObject {
                    bytes: value.as_ptr() as *mut c_char,
                    size: value.len(),
                },
            },
        };
        // SAFETY: PMIx_Put copies the value; `value` outlives the call.
        let rc = unsafe { (self.api.put)(PMIX_GLOBAL, k.as_ptr(), &mut v) };
        if rc != PMIX_SUCCESS {
            return Err(refused(format!("PMIx_Put({key}) failed with status {rc}")));
        }
        self.pending_commit = true;
        if self.commit_each_put {
            self.commit()?;
        }
        Ok(())
    }

    fn get(&mut self, rank: u32, key: &str) -> Result<Vec<u8>, BootstrapError> {
        let p = self.spawner.current_proc(&self.job, rank);
        self.bytes_of(&p, key, false)?
            .ok_or_else(|| refused("PMIx_Get without PMIX_OPTIONAL found nothing"))
    }

    /// PMIx_Get with `PMIX_OPTIONAL` in the namespace of `rank`'s current incarnation;
    /// a saved communicator (`SAVED_PREFIX`) is also looked for in the earlier ones,
    /// newest first, as `steadfast-run`'s store keeps them across restarts. Sees what
    /// processes on this node committed (the server's store is shared); on another
    /// node, only what this process fetched before.
    fn lookup(&mut self, rank: u32, key: &str) -> Result<Option<Vec<u8>>, BootstrapError> {
        let procs = if key.starts_with(SAVED_PREFIX) {
            self.spawner.all_procs(&self.job, rank)
        } else {
            vec![self.spawner.current_proc(&self.job, rank)]
        };
        for p in procs {
            if let Some(v) = self.bytes_of(&p, key, true)? {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.commit()?;
        // SAFETY: NULL procs means every process of our namespace; no info.
        let rc = unsafe { (self.api.fence)(std::ptr::null(), 0, std::ptr::null(), 0) };
        if rc != PMIX_SUCCESS {
            return Err(refused(format!("PMIx_Fence failed with status {rc}")));
        }
        self.commit_each_put = true;
        Ok(())
    }

    fn failures(&mut self, wait: Duration) -> Result<Vec<FailureEvent>, BootstrapError> {
        self.poll_failures(wait)
    }

    fn restart_begin(&mut self, rank: u32, generation: u32) -> Result<(), BootstrapError> {
        self.begin_restart(rank, generation)
    }

    fn restart_poll(
        &mut self,
        wait: Duration,
    ) -> Result<Option<Result<Rejoin, BootstrapError>>, BootstrapError> {
        Ok(self.poll_restart(wait))
    }

    fn joined(&mut self) -> Result<(), BootstrapError> {
        self.commit()?;
        self.announce_joined()
    }

    fn rejoins(&mut self) -> Vec<Rejoin> {
        self.poll_rejoins()
    }
}

impl Drop for Pmix {
    fn drop(&mut self) {
        // SAFETY: initialised in from_env; no info array.
        unsafe { (self.api.finalize)(std::ptr::null(), 0) };
    }
}
