//! What the messenger does when the provider keeps a buffer after a cancel: close the
//! endpoint (which makes libfabric discard every posted operation) and stay broken,
//! instead of aborting the embedding process.

use crate::error::Error;

use super::Messenger;

impl Messenger {
    /// The provider still holds an operation's buffer after a cancel and the grace
    /// period (a provider bug, or a read it cannot cancel): the caller's borrow of that
    /// buffer is about to end, so the provider must be made to let go before we return.
    ///
    /// Aborting the process (as this layer once did) would be sound but kills the
    /// program that embeds us. Instead the endpoint is closed now: libfabric discards
    /// every operation still posted to a closed endpoint (fi_endpoint(3)), so no
    /// completion of ours will touch the caller's buffer, a staging buffer or the slot
    /// table afterwards. The messenger is then broken: every later call returns
    /// [`Error::Broken`] (its requests cannot complete any more), and at drop the slot
    /// table and staging memory are leaked rather than freed, in case a provider keeps a
    /// pointer past the close. Returns the error for the caller.
    ///
    /// The fence covers what the provider does in this process. A copy that a peer
    /// process performs into our memory (shm's CMA path for some reads) and has already
    /// started is outside any local call's reach; such reads are the ones given up only
    /// once the peer's process is gone (`orphan_reads_from_exited`).
    ///
    /// Should `fi_close` itself refuse, the operations are still live and returning
    /// would be unsound; the call then keeps progressing until the provider does give
    /// the buffer back (logged as an error). None of the providers this layer supports
    /// (tcp, net, shm, udp, with rxm) refuses to close an endpoint.
    pub(super) fn fence_kept_buffer(&mut self) -> Error {
        log::error!(
            "steadfast-fabric: the provider did not release a buffer after cancel; \
             closing the endpoint so that it lets go (this messenger is unusable from now on)"
        );
        self.broken = true;
        let mut reported = false;
        while let Err(e) = self.endpoint.close_now() {
            if !reported {
                log::error!(
                    "steadfast-fabric: cannot close the endpoint ({e}); waiting for the provider"
                );
                reported = true;
            }
            // Completions still flow while the endpoint is open; once nothing is posted,
            // no buffer is held and returning is sound.
            if self.drain_while_broken() {
                break;
            }
            std::thread::yield_now();
        }
        Self::broken_error()
    }

    /// One round of completions on a broken, still open endpoint; whether nothing is
    /// posted any more.
    pub(super) fn drain_while_broken(&mut self) -> bool {
        self.broken = false;
        let _ = self.poll_completions();
        self.broken = true;
        !self.slots.active().any(|i| self.slots.get(i).posted)
    }

    /// The error of every call on a broken messenger.
    pub(super) fn broken_error() -> Error {
        Error::Broken {
            reason: "the provider kept a buffer after cancel; the endpoint was closed",
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{Error, FabricConfig, Messenger, MessengerConfig};

    fn config(id: u32, timeout: Duration) -> MessengerConfig {
        let mut c = MessengerConfig::new(FabricConfig::new("tcp").domain("lo"), id);
        c.operation_timeout = Some(timeout);
        c
    }

    #[test]
    fn a_fenced_messenger_is_broken_and_never_fills_the_kept_buffer() {
        let mut a = Messenger::open(config(0, Duration::from_secs(60))).unwrap();
        let mut b = Messenger::open(config(1, Duration::from_secs(5))).unwrap();
        a.add_peer(1, &b.address().to_bytes()).unwrap();
        b.add_peer(0, &a.address().to_bytes()).unwrap();
        let mut buf = vec![0u8; 256];
        // SAFETY: `buf` outlives `a`; after the fence nothing may write it, which is
        // what this test checks.
        let request = unsafe { a.irecv(Some(1), 7, 0, &mut buf) }.unwrap();
        // As if the provider had kept `buf` past a cancel and its grace period.
        assert!(matches!(a.fence_kept_buffer(), Error::Broken { .. }));
        // The message the receive was posted for: refused, timed out or buffered by the
        // provider, but never delivered into `buf`.
        let _ = b.send(0, 7, &[0xab; 256]);
        std::thread::sleep(Duration::from_millis(200));
        assert!(buf.iter().all(|&x| x == 0), "the fenced receive was filled");
        assert!(matches!(a.wait(request), Err(Error::Broken { .. })));
        assert!(matches!(a.progress(), Err(Error::Broken { .. })));
        assert!(matches!(a.send(1, 8, &[1; 8]), Err(Error::Broken { .. })));
        assert!(matches!(
            a.recv(Some(1), 8, 0, &mut [0; 8]),
            Err(Error::Broken { .. })
        ));
        // Dropping leaks the slot table instead of freeing memory the provider knew.
        drop(a);
    }
}
