//! The one place hwtests reads the runtime's parameters (`steadfast::params`), so a
//! change of that API is adapted here alone.

use steadfast::params::{Params, RouteMode};

/// What hwtests needs of the parameters, and the whole set for `World::init_with`.
#[derive(Clone, Debug)]
pub struct Settings {
    params: Params,
}

impl Settings {
    /// Loads and validates the parameters (environment, `STEADFAST_PARAM_FILE`,
    /// `~/.steadfast/params.conf`).
    ///
    /// # Errors
    /// The parameter error, naming the parameter and its source.
    pub fn load() -> Result<Self, String> {
        let params = Params::load().map_err(|e| e.to_string())?;
        Ok(Settings { params })
    }

    /// The domain the user named (`domain`), if any.
    pub fn domain(&self) -> Option<String> {
        self.params.domain().map(str::to_string)
    }

    /// Whether every peer is reached through the fabric (`route = fabric`).
    pub fn route_fabric(&self) -> bool {
        self.params.route() == RouteMode::Fabric
    }

    /// This process's node identity, as the runtime computes it: `node_id` if set,
    /// else hostname plus boot id.
    pub fn node_id(&self) -> String {
        if let Some(set) = self.params.node_id() {
            return set.to_string();
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        format!("{}/{}", host.trim(), boot.trim())
    }

    /// The parameters, for `World::init_with`.
    pub fn params(&self) -> Params {
        self.params.clone()
    }
}
