//! Control messages a restarted process holds for local ranks that have not admitted
//! it yet (see `docs/restart.md`, "Two ranks restarted at once").
//!
//! A restarted process may push into a survivor's ring only after that survivor admitted
//! it, which the survivor does in a progress round of its own once the launcher says the
//! new incarnation joined. A blocking send of a control message in the meantime would
//! stop this process inside `drive` (during its own `World::init`, before it joins), and
//! two ranks restarted at once would each wait for the other. So the messages wait here,
//! per destination in the order they were produced, and each progress round sends the
//! ones whose destination admitted us. Rare (a restart), so a plain list.

use steadfast_shm::{Endpoint as ShmEndpoint, ShmError};

use super::{Engine, Route, CONTROL};

/// Held control messages: (world rank, bytes), in production order.
#[derive(Default)]
pub(super) struct ControlHeld(Vec<(u32, Vec<u8>)>);

impl ControlHeld {
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether messages to world rank `to` are held (a later one must wait behind).
    pub(super) fn holds(&self, to: u32) -> bool {
        self.0.iter().any(|h| h.0 == to)
    }

    pub(super) fn hold(&mut self, to: u32, bytes: &[u8]) {
        self.0.push((to, bytes.to_vec()));
    }
}

/// Sends control message `bytes` to local rank `l` if it has admitted this process:
/// `Ok(false)` when it has not yet (hold the message); `Err` the failure to report.
pub(super) fn send_if_admitted(
    shm: &mut ShmEndpoint,
    l: u32,
    bytes: &[u8],
) -> Result<bool, String> {
    let sent = match shm.admitted_by(l) {
        Ok(false) => return Ok(false),
        Ok(true) => shm.send(l, CONTROL, bytes),
        Err(e) => Err(e),
    };
    match sent {
        Ok(()) => Ok(true),
        Err(ShmError::PeerDead(_)) => Err("process exited".into()),
        Err(e) => Err(format!("shm: {e}")),
    }
}

impl Engine {
    /// Sends the held control messages whose destination admitted this process, in
    /// order per destination; a destination found dead is reported failed (its
    /// messages dropped, as control traffic toward the dead is).
    pub(super) fn send_held_control(&mut self) {
        let held = std::mem::take(&mut self.control_held.0);
        let mut waiting: Vec<u32> = Vec::new();
        let mut keep = Vec::new();
        for (to, bytes) in held {
            if waiting.contains(&to) {
                keep.push((to, bytes));
                continue;
            }
            let (Route::Shm(l), Some(shm)) = (self.routes[to as usize], self.shm.as_mut()) else {
                continue;
            };
            match send_if_admitted(shm, l, &bytes) {
                Ok(true) => {}
                Ok(false) => {
                    waiting.push(to);
                    keep.push((to, bytes));
                }
                Err(how) => {
                    waiting.push(to);
                    self.send_failures.push((to, how));
                }
            }
        }
        // A failed destination's later messages go too.
        let failed: Vec<u32> = self.send_failures.iter().map(|f| f.0).collect();
        keep.retain(|h| !failed.contains(&h.0));
        self.control_held.0 = keep;
        if !self.send_failures.is_empty() {
            self.drive();
        }
    }
}
