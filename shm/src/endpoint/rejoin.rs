//! Restarted peers (see `docs/restart.md`): a survivor admits the new incarnation of a
//! local rank; a restarted process starts without its dead peers.
//!
//! Fencing: the survivor's ring from the restarted rank still holds whatever the dead
//! incarnation published and nobody popped, and maybe a cell it was writing. Admission
//! drops all of it ([`Consumer::admit`](crate::ring::Consumer::admit)), together with
//! the dead incarnation's messages already queued here (unexpected) or half read
//! (partial eager); the restarted process pushes into that ring only after it reads its
//! own generation there. The restarted process's own segment is new (same name, its
//! generation in the header): survivors map it again and produce into it from zero.

use super::{split_all_free, CopyPath, Endpoint, Peer};
use crate::error::ShmError;
use crate::segment::{Segment, SegmentError};
use steadfast_os::ProcessWatch;

impl Endpoint {
    /// Marks local ranks known dead before [`connect`](Self::connect), which then
    /// skips them (their segments are gone): a restarted process starts without them.
    pub fn assume_dead(&mut self, ranks: &[u32]) {
        for &r in ranks {
            if r != self.config.rank {
                if let Some(d) = self.dead.get_mut(r as usize) {
                    *d = true;
                }
            }
        }
    }

    /// Admits incarnation `generation` of local rank `rank`, whose previous incarnation
    /// has exited: maps its new segment, drops everything of the old one still here,
    /// and lets the new one push into our ring. `Ok(false)` when its new segment is not
    /// there yet (ask again later).
    ///
    /// # Errors
    /// [`ShmError::InvalidArgument`] for a rank that is not another local rank;
    /// [`ShmError::Segment`] for a segment of another geometry or that cannot be read.
    pub fn readmit(&mut self, rank: u32, generation: u32) -> Result<bool, ShmError> {
        if rank >= self.config.ranks || rank == self.config.rank {
            return Err(ShmError::InvalidArgument(format!(
                "rank {rank} is not another local rank (0..{}, self {})",
                self.config.ranks, self.config.rank
            )));
        }
        let segment = match Segment::attach(self.config.job, rank, 1000) {
            Ok(s) => s,
            Err(SegmentError::NotReady { .. }) => return Ok(false),
            Err(SegmentError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(false)
            }
            Err(e) => return Err(e.into()),
        };
        if segment.owner_generation() != generation {
            // The dead incarnation's segment, not removed yet (or a later one's).
            return Ok(false);
        }
        if segment.geometry() != self.own.geometry() {
            return Err(SegmentError::Invalid {
                path: segment.path().to_path_buf(),
                reason: format!(
                    "geometry {:?}, this process expects {:?}",
                    segment.geometry(),
                    self.own.geometry()
                ),
            }
            .into());
        }
        let r = rank as usize;
        // Everything of the dead incarnation that is still here goes.
        self.unexpected.retain(|u| u.source != rank);
        self.partial[r] = None;
        let mut released = Vec::new();
        self.offers.retain(|o| {
            let mine = o.dest == rank;
            if mine {
                released.push(o.token);
            }
            !mine
        });
        self.split_free[r] = split_all_free();
        let mut consumer = self.own.consumer_at(rank, self.rx[r]);
        consumer.admit(generation);
        self.rx[r] = consumer.pos();
        let pid = segment.owner_pid();
        let apid = match (&self.xpmem, segment.xpmem_segid()) {
            (Some(x), segid) if segid > 0 => x.get(segid),
            _ => None,
        };
        let tx = segment.producer(self.config.rank).pos();
        self.peers[r] = Some(Peer {
            segment,
            pid,
            watch: ProcessWatch::new(pid),
            tx,
            path: CopyPath::SingleCopy,
            apid,
            // A first incarnation pushes at once: the new segment's rings take any
            // current producer. A restarted one (this process) waits until the peer
            // admitted it: the peer may have started before this process joined,
            // counted it dead and will drop, at its own admission of this process,
            // whatever is in the ring then (two ranks restarted at once; found under the
            // PMIx spawner, whose rejoin news is slower: `tests/restart_pmix.rs`).
            awaiting_admission: self.config.generation > 0,
            eager_cost: Default::default(),
        });
        self.dead[r] = false;
        log::debug!(
            "steadfast-shm: local rank {rank} admitted as incarnation {generation} (pid {pid}); {} offers to the dead one released",
            released.len()
        );
        Ok(true)
    }
}
