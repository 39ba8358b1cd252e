//! Liveness of peers while an operation waits on them: the process check for peers on
//! this host, probes for the others, and giving up reads from a process that exited.

use std::time::{Duration, Instant};

use crate::error::Error;
use crate::PeerId;
use steadfast_os::ProcessWatch;

use super::slots::{Op, Outcome};
use super::{wire, Messenger, ORPHAN};

impl Messenger {
    /// Grace after a peer's process exited before reads from it are given up.
    pub(super) const EXITED_GRACE: Duration = Duration::from_millis(500);

    /// Some providers never complete a read whose target process died (shm serves reads
    /// from the target's side). Once the process is confirmed gone and a grace period
    /// has passed, nothing can write into the receive buffer any more: the read chunks
    /// are orphaned (their late completions only free them) and the receive fails.
    pub(super) fn orphan_reads_from_exited(&mut self, index: u32, peer: PeerId) {
        let Some(Some(p)) = self.peers.get(peer as usize) else {
            return;
        };
        if p.exited_at.is_none_or(|t| t.elapsed() < Self::EXITED_GRACE) {
            return;
        }
        let slot = self.slots.get(index);
        if slot.op != Op::Recv
            || slot.chunks_in_flight == 0
            || !matches!(slot.outcome, Outcome::Pending)
        {
            return;
        }
        let chunks: Vec<u32> = self
            .slots
            .active()
            .filter(|&i| self.slots.get(i).op == Op::ReadChunk && self.slots.get(i).parent == index)
            .collect();
        for chunk in chunks {
            self.slots.get_mut(chunk).parent = ORPHAN;
        }
        self.slots.get_mut(index).chunks_in_flight = 0;
        let reason = p.dead.clone().unwrap_or_default();
        self.abandon(index, Error::PeerUnreachable { peer, reason });
    }

    /// Checks one peer: its process (same host), else (when `full`) a probe message.
    pub(super) fn check_liveness(&mut self, peer: PeerId, full: bool) {
        let Some(Some(p)) = self.peers.get_mut(peer as usize) else {
            return;
        };
        if p.dead.is_some() {
            return;
        }
        if p.watch.as_ref().is_some_and(ProcessWatch::has_exited) {
            p.exited_at = Some(Instant::now());
            self.mark_peer_dead(peer, "process exited".into());
            return;
        }
        if full && !p.probing {
            p.probing = true;
            let control = wire::Control {
                op: wire::ControlOp::Probe,
                status: wire::FinStatus::Done,
                source: self.config.local_id,
                token: 0,
            };
            if self.send_control(peer, control).is_ok() {
                self.stats.probes += 1;
            } else if let Some(Some(p)) = self.peers.get_mut(peer as usize) {
                p.probing = false;
            }
        }
    }
}
