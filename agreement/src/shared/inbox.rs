//! Events for the progress owner, posted by any thread: crossbeam's bounded MPMC queue.

use crossbeam_queue::ArrayQueue;

/// The inbox is full: the event was not queued (back-pressure; retry after progress).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("inbox full ({capacity} events)")]
pub struct InboxFull {
    /// The inbox's capacity.
    pub capacity: usize,
}

/// A bounded, lock-free queue of events for whoever holds the progress token.
#[derive(Debug)]
pub struct Inbox<T> {
    queue: ArrayQueue<T>,
}

impl<T> Inbox<T> {
    /// An inbox holding at most `capacity` events.
    ///
    /// # Panics
    /// If `capacity` is 0.
    pub fn new(capacity: usize) -> Self {
        Inbox {
            queue: ArrayQueue::new(capacity),
        }
    }

    /// Posts an event.
    ///
    /// # Errors
    /// [`InboxFull`] with the event handed back, when the inbox is full.
    pub fn post(&self, event: T) -> Result<(), (InboxFull, T)> {
        self.queue.push(event).map_err(|e| {
            (
                InboxFull {
                    capacity: self.queue.capacity(),
                },
                e,
            )
        })
    }

    /// Takes the oldest event.
    pub fn take(&self) -> Option<T> {
        self.queue.pop()
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no event waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn bounded_fifo_across_threads() {
        let inbox = Arc::new(Inbox::new(4));
        for i in 0..4 {
            inbox.post(i).unwrap();
        }
        let (full, back) = inbox.post(9).unwrap_err();
        assert_eq!((full.capacity, back), (4, 9));
        assert_eq!(inbox.take(), Some(0));
        let producers: Vec<_> = (0..2)
            .map(|t| {
                let inbox = inbox.clone();
                std::thread::spawn(move || {
                    let mut sent = 0;
                    while sent < 1000 {
                        if inbox.post(100 + t).is_ok() {
                            sent += 1;
                        } else {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut got = 0;
        while got < 2000 + 3 {
            if inbox.take().is_some() {
                got += 1;
            } else {
                std::thread::yield_now();
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        assert!(inbox.is_empty());
    }
}
