//! Provider selection: resolving a provider name and querying `fi_getinfo`.

use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::ptr::{self, NonNull};

use steadfast_fabric_sys as sys;

use crate::error::{check, Error, Result};

/// What to open: a provider by name and, optionally, one of its domains.
///
/// Provider names are libfabric's (`net`, `shm`, `verbs`, `gni`, `cxi`, `efa`,
/// `tcp;ofi_rxm`, ...) plus the alias `tcp`, which means the fastest RDM-capable TCP
/// path the installed libfabric offers; see [`ProviderResolution`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FabricConfig {
    /// Provider name as the user gave it.
    pub provider: String,
    /// Domain (for socket providers: the network interface, such as `lo`), or any.
    pub domain: Option<String>,
}

impl FabricConfig {
    /// A configuration for `provider`, any domain.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            domain: None,
        }
    }

    /// Restricts the query to one domain (for tcp, net, udp: an interface name like `lo`).
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }
}

/// How a requested provider name was mapped onto an installed provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderResolution {
    /// The name that was asked for.
    pub requested: String,
    /// The libfabric provider name that is used (`net`, `tcp;ofi_rxm`, ...).
    pub provider: String,
    /// Why this one, in a few words.
    pub reason: &'static str,
}

impl std::fmt::Display for ProviderResolution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} -> {} ({})",
            self.requested, self.provider, self.reason
        )
    }
}

/// Maps a requested provider name to one of the `available` RDM providers.
///
/// `tcp` takes the first available of [`crate::quirks::TCP_CHOICES`] (native tcp RDM,
/// libfabric 1.18+; then `net`, 1.17's native RDM over TCP; then `tcp;ofi_rxm`). Any other name is taken as is, or through `ofi_rxm` when
/// the provider has only MSG endpoints (as `verbs` does).
///
/// # Errors
/// [`Error::ProviderNotFound`], listing `available`, when nothing fits.
pub fn resolve_provider(requested: &str, available: &[String]) -> Result<ProviderResolution> {
    let has = |name: &str| available.iter().any(|a| a == name);
    let pick = |provider: &str, reason| ProviderResolution {
        requested: requested.to_owned(),
        provider: provider.to_owned(),
        reason,
    };
    if requested == "tcp" {
        if let Some((provider, reason)) = crate::quirks::TCP_CHOICES
            .iter()
            .find(|(provider, _)| has(provider))
        {
            return Ok(pick(provider, reason));
        }
    } else if has(requested) {
        return Ok(pick(requested, "as requested"));
    } else if !requested.contains(';') && has(&format!("{requested};ofi_rxm")) {
        return Ok(pick(
            &format!("{requested};ofi_rxm"),
            "RDM through the ofi_rxm utility",
        ));
    }
    Err(Error::ProviderNotFound {
        requested: requested.to_owned(),
        available: available.to_vec(),
    })
}

/// The providers that offer tagged RDM endpoints on this machine, sorted.
///
/// # Errors
/// [`Error::LibraryUnavailable`] when libfabric cannot be loaded; otherwise only if
/// `fi_getinfo` fails for a reason other than finding nothing.
pub fn available_providers() -> Result<Vec<String>> {
    let hints = Hints::new(sys::FI_TAGGED as u64)?;
    let list = match InfoList::get(&hints)? {
        Some(list) => list,
        None => return Ok(Vec::new()),
    };
    let names: BTreeSet<String> = list.iter().map(|i| i.provider_name()).collect();
    Ok(names.into_iter().collect())
}

/// Capabilities every steadfast endpoint needs: tagged messages for user data, untagged
/// ones for the messenger's control traffic (so its receives never sit in the tagged
/// match list), RMA for rendezvous.
fn base_caps() -> u64 {
    (sys::FI_TAGGED
        | sys::FI_MSG
        | sys::FI_RMA
        | sys::FI_READ
        | sys::FI_WRITE
        | sys::FI_REMOTE_READ
        | sys::FI_REMOTE_WRITE) as u64
}

/// Owned `fi_info` hints (freed with `fi_freeinfo`).
struct Hints(NonNull<sys::fi_info>);

impl Hints {
    /// Hints for a tagged RDM endpoint with `caps`, the context modes and memory
    /// registration modes steadfast supports, and domain-level threading.
    fn new(caps: u64) -> Result<Self> {
        // The first libfabric call of every path: loads the library, or says why not.
        crate::library()?;
        // SAFETY: fi_allocinfo returns a zeroed fi_info with its attribute structs
        // allocated, or null on allocation failure.
        let raw = NonNull::new(unsafe { sys::fi_allocinfo() }).ok_or(Error::Fabric {
            call: "fi_allocinfo",
            code: libc::ENOMEM as u32,
            message: "out of memory".into(),
        })?;
        let hints = Hints(raw);
        // SAFETY: raw is a valid fi_info from fi_allocinfo whose attr pointers are
        // non-null; we have exclusive access to it.
        unsafe {
            let info = &mut *raw.as_ptr();
            info.caps = caps;
            info.mode = sys::FI_CONTEXT | sys::FI_CONTEXT2;
            (*info.ep_attr).type_ = sys::FI_EP_RDM;
            let domain = &mut *info.domain_attr;
            domain.mr_mode = (sys::FI_MR_LOCAL
                | sys::FI_MR_VIRT_ADDR
                | sys::FI_MR_ALLOCATED
                | sys::FI_MR_PROV_KEY
                | sys::FI_MR_ENDPOINT) as i32;
            domain.threading = sys::FI_THREAD_DOMAIN;
            (*info.tx_attr).msg_order = sys::FI_ORDER_SAS as u64;
            (*info.rx_attr).msg_order = sys::FI_ORDER_SAS as u64;
        }
        Ok(hints)
    }

    /// Sets a string attribute that `fi_freeinfo` will free (so it is `strdup`ed).
    fn set_string(slot: &mut *mut libc::c_char, value: &str) -> Result<()> {
        let value = CString::new(value)
            .map_err(|_| Error::InvalidArgument(format!("{value:?} contains a NUL byte")))?;
        // SAFETY: value is a valid C string; strdup returns malloc'd memory that
        // fi_freeinfo releases with free().
        *slot = unsafe { libc::strdup(value.as_ptr()) };
        Ok(())
    }

    fn provider(&mut self, name: &str) -> Result<()> {
        // SAFETY: the fabric_attr pointer of an fi_allocinfo result is valid and ours.
        let attr = unsafe { &mut *self.0.as_ref().fabric_attr };
        Self::set_string(&mut attr.prov_name, name)
    }

    fn domain(&mut self, name: &str) -> Result<()> {
        // SAFETY: as in `provider`, for domain_attr.
        let attr = unsafe { &mut *self.0.as_ref().domain_attr };
        Self::set_string(&mut attr.name, name)
    }
}

impl Drop for Hints {
    fn drop(&mut self) {
        // SAFETY: allocated by fi_allocinfo, freed once here.
        unsafe { sys::fi_freeinfo(self.0.as_ptr()) }
    }
}

/// Sets the environment variables the provider workarounds need
/// ([`crate::quirks::environment`]: `FI_NET_MAX_SAVED` for `net`, which otherwise stops
/// reading a connection after 4 unexpected messages) unless the user set them. A process
/// that uses `net` should call it once, before its first libfabric call (libfabric
/// reads them when it first loads its providers); the fabric layer never changes the
/// environment on its own. The runtime calls it unless its `provider_environment`
/// parameter is 0.
///
/// ```
/// steadfast_fabric::apply_quirk_environment();
/// ```
pub fn apply_quirk_environment() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (name, value) in crate::quirks::environment() {
            let (name, value) = (CString::new(name), CString::new(value));
            let (Ok(name), Ok(value)) = (name, value) else {
                continue;
            };
            // SAFETY: two valid C strings; overwrite 0 keeps a user's value. Another
            // thread may read the environment meanwhile: glibc's setenv never frees the
            // array it replaces, so such a reader sees the old or the new one.
            unsafe { libc::setenv(name.as_ptr(), value.as_ptr(), 0) };
        }
    });
}

/// A list returned by `fi_getinfo`.
struct InfoList(NonNull<sys::fi_info>);

impl InfoList {
    /// `fi_getinfo` with `hints`; `None` when nothing matches.
    fn get(hints: &Hints) -> Result<Option<Self>> {
        let mut out: *mut sys::fi_info = ptr::null_mut();
        // SAFETY: hints is a valid fi_info; out receives a list we own on success.
        let ret = unsafe {
            sys::fi_getinfo(
                sys::FI_HEADER_VERSION,
                ptr::null(),
                ptr::null(),
                0,
                hints.0.as_ptr(),
                &mut out,
            )
        };
        if ret == -(sys::FI_ENODATA as i32) {
            return Ok(None);
        }
        check("fi_getinfo", ret as i64)?;
        Ok(NonNull::new(out).map(InfoList))
    }

    fn iter(&self) -> impl Iterator<Item = InfoRef<'_>> {
        let mut next = self.0.as_ptr();
        std::iter::from_fn(move || {
            // SAFETY: next is null or a node of the list, which lives as long as self.
            let node = unsafe { next.as_ref()? };
            next = node.next;
            Some(InfoRef(node))
        })
    }
}

impl Drop for InfoList {
    fn drop(&mut self) {
        // SAFETY: the list came from fi_getinfo and is freed once here.
        unsafe { sys::fi_freeinfo(self.0.as_ptr()) }
    }
}

/// A borrowed `fi_info` node.
#[derive(Clone, Copy)]
struct InfoRef<'a>(&'a sys::fi_info);

/// Reads a C string field, empty when null.
fn c_string(ptr: *const libc::c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: libfabric's string attributes are NUL-terminated when non-null and live
    // as long as their fi_info.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

impl InfoRef<'_> {
    fn provider_name(self) -> String {
        // SAFETY: fi_getinfo results have non-null attribute pointers.
        c_string(unsafe { (*self.0.fabric_attr).prov_name })
    }

    fn domain_name(self) -> String {
        // SAFETY: as above.
        c_string(unsafe { (*self.0.domain_attr).name })
    }
}

/// One provider configuration chosen by [`Info::query`]: the attributes every other
/// object is opened from.
pub struct Info {
    raw: NonNull<sys::fi_info>,
    resolution: ProviderResolution,
}

// SAFETY: Info exclusively owns its fi_info copy; nothing in it refers to thread-local
// state, and all access through &Info is read-only.
unsafe impl Send for Info {}
// SAFETY: see Send; shared access never mutates.
unsafe impl Sync for Info {}

impl Info {
    /// Resolves `config.provider` and returns the first matching tagged RDM endpoint
    /// configuration, with atomics when the provider has them.
    ///
    /// # Errors
    /// [`Error::ProviderNotFound`] for an unknown or absent provider (listing those that
    /// are available); [`Error::NoMatchingEndpoint`] when the domain does not exist.
    pub fn query(config: &FabricConfig) -> Result<Self> {
        let available = available_providers()?;
        let resolution = resolve_provider(&config.provider, &available)?;
        let with_atomics = base_caps() | sys::FI_ATOMIC as u64;
        for caps in [with_atomics, base_caps()] {
            let mut hints = Hints::new(caps)?;
            hints.provider(&resolution.provider)?;
            if let Some(domain) = &config.domain {
                hints.domain(domain)?;
            }
            let Some(list) = InfoList::get(&hints)? else {
                continue;
            };
            // Filter ourselves too: some utility providers ignore the domain hint.
            let found = list
                .iter()
                .find(|i| {
                    i.provider_name() == resolution.provider
                        && config.domain.as_ref().is_none_or(|d| i.domain_name() == *d)
                })
                .map(|i| i.0 as *const sys::fi_info);
            if let Some(found) = found {
                // SAFETY: found points into the list, still alive; fi_dupinfo deep-copies it.
                let copy =
                    NonNull::new(unsafe { sys::fi_dupinfo(found) }).ok_or(Error::Fabric {
                        call: "fi_dupinfo",
                        code: libc::ENOMEM as u32,
                        message: "out of memory".into(),
                    })?;
                return Ok(Info {
                    raw: copy,
                    resolution,
                });
            }
        }
        let domains = Self::domains_of(&resolution.provider)?;
        Err(Error::NoMatchingEndpoint {
            provider: resolution.provider,
            what: match &config.domain {
                Some(d) => format!("domain {d:?} (its domains here: {})", domains.join(", ")),
                None => "tagged RDM with RMA".into(),
            },
        })
    }

    /// The domains a provider offers (for error messages and `steadfast-info`).
    ///
    /// # Errors
    /// Only if `fi_getinfo` itself fails.
    pub fn domains_of(provider: &str) -> Result<Vec<String>> {
        let mut hints = Hints::new(sys::FI_TAGGED as u64)?;
        hints.provider(provider)?;
        let Some(list) = InfoList::get(&hints)? else {
            return Ok(Vec::new());
        };
        let names: BTreeSet<String> = list
            .iter()
            .filter(|i| i.provider_name() == provider)
            .map(|i| i.domain_name())
            .collect();
        Ok(names.into_iter().collect())
    }

    /// How the requested provider name was resolved.
    pub fn resolution(&self) -> &ProviderResolution {
        &self.resolution
    }

    pub(crate) fn raw(&self) -> *mut sys::fi_info {
        self.raw.as_ptr()
    }

    fn get(&self) -> &sys::fi_info {
        // SAFETY: raw is a valid fi_info owned by self.
        unsafe { self.raw.as_ref() }
    }

    /// The libfabric provider name (`net`, `tcp;ofi_rxm`, `shm`, ...).
    pub fn provider_name(&self) -> String {
        InfoRef(self.get()).provider_name()
    }

    /// The domain name (interface for socket providers).
    pub fn domain_name(&self) -> String {
        InfoRef(self.get()).domain_name()
    }

    /// The capability bits (`FI_*`) the provider granted.
    pub fn caps(&self) -> u64 {
        self.get().caps
    }

    /// Whether the endpoint can do atomics.
    pub fn has_atomics(&self) -> bool {
        self.caps() & sys::FI_ATOMIC as u64 != 0
    }

    /// The provider's memory registration mode bits (`FI_MR_*`).
    pub fn mr_mode(&self) -> MrMode {
        // SAFETY: domain_attr of a getinfo result is non-null.
        MrMode(unsafe { (*self.get().domain_attr).mr_mode } as u32)
    }

    /// Size of memory-region keys in bytes.
    pub fn mr_key_size(&self) -> usize {
        // SAFETY: as above.
        unsafe { (*self.get().domain_attr).mr_key_size }
    }

    /// Bytes of remote CQ data a message can carry.
    pub fn cq_data_size(&self) -> usize {
        // SAFETY: domain_attr of a getinfo result is non-null.
        unsafe { (*self.get().domain_attr).cq_data_size }
    }

    /// Largest message `fi_tinject` accepts.
    pub fn inject_size(&self) -> usize {
        // SAFETY: tx_attr of a getinfo result is non-null.
        unsafe { (*self.get().tx_attr).inject_size }
    }

    /// Largest single message (and RMA transfer) the endpoint accepts.
    pub fn max_msg_size(&self) -> usize {
        // SAFETY: ep_attr of a getinfo result is non-null.
        unsafe { (*self.get().ep_attr).max_msg_size }
    }

    /// Whether data transfers progress only when the application polls.
    pub fn manual_progress(&self) -> bool {
        // SAFETY: as above.
        unsafe { (*self.get().domain_attr).data_progress == sys::FI_PROGRESS_MANUAL }
    }

    /// libfabric's address format code (`FI_SOCKADDR_IN`, `FI_ADDR_STR`, ...).
    pub fn addr_format(&self) -> u32 {
        self.get().addr_format
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        // SAFETY: raw came from fi_dupinfo and is freed once here.
        unsafe { sys::fi_freeinfo(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for Info {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Info")
            .field("resolution", &self.resolution)
            .field("domain", &self.domain_name())
            .field("mr_mode", &self.mr_mode())
            .field("inject_size", &self.inject_size())
            .field("atomics", &self.has_atomics())
            .finish()
    }
}

/// The memory registration mode bits of a provider.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MrMode(pub u32);

impl MrMode {
    /// Local buffers must be registered and their descriptors passed (`FI_MR_LOCAL`).
    pub fn local(self) -> bool {
        self.0 & sys::FI_MR_LOCAL != 0
    }
    /// Remote addresses are virtual addresses, not offsets (`FI_MR_VIRT_ADDR`).
    pub fn virt_addr(self) -> bool {
        self.0 & sys::FI_MR_VIRT_ADDR != 0
    }
    /// The provider picks keys (`FI_MR_PROV_KEY`).
    pub fn prov_key(self) -> bool {
        self.0 & sys::FI_MR_PROV_KEY != 0
    }
    /// Regions must be bound to the endpoint and enabled (`FI_MR_ENDPOINT`).
    pub fn endpoint(self) -> bool {
        self.0 & sys::FI_MR_ENDPOINT != 0
    }
}

impl std::fmt::Debug for MrMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names = Vec::new();
        for (bit, name) in [
            (sys::FI_MR_LOCAL, "LOCAL"),
            (sys::FI_MR_VIRT_ADDR, "VIRT_ADDR"),
            (sys::FI_MR_ALLOCATED, "ALLOCATED"),
            (sys::FI_MR_PROV_KEY, "PROV_KEY"),
            (sys::FI_MR_ENDPOINT, "ENDPOINT"),
            (sys::FI_MR_RAW, "RAW"),
        ] {
            if self.0 & bit != 0 {
                names.push(name);
            }
        }
        write!(f, "[{}]", names.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avail(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tcp_prefers_native_then_net_then_rxm() {
        let all = avail(&["net", "shm", "tcp", "tcp;ofi_rxm"]);
        assert_eq!(resolve_provider("tcp", &all).unwrap().provider, "tcp");
        let no_native = avail(&["net", "shm", "tcp;ofi_rxm"]);
        assert_eq!(resolve_provider("tcp", &no_native).unwrap().provider, "net");
        let rxm_only = avail(&["shm", "tcp;ofi_rxm"]);
        assert_eq!(
            resolve_provider("tcp", &rxm_only).unwrap().provider,
            "tcp;ofi_rxm"
        );
    }

    #[test]
    fn msg_only_provider_goes_through_rxm() {
        let all = avail(&["verbs;ofi_rxm", "shm"]);
        let r = resolve_provider("verbs", &all).unwrap();
        assert_eq!(r.provider, "verbs;ofi_rxm");
        assert_eq!(
            resolve_provider("shm", &all).unwrap().reason,
            "as requested"
        );
    }

    #[test]
    fn unknown_provider_lists_available() {
        let err = resolve_provider("gni", &avail(&["net", "shm"])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("\"gni\""), "{text}");
        assert!(text.contains("net, shm"), "{text}");
    }
}
