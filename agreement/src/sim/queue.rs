//! Event queue of the simulator: a radix heap over unique monotone keys.
//!
//! Simulated time never goes back, so every key pushed is at least the last key popped.
//! A radix heap exploits that: an item sits in the bucket named by the highest bit in
//! which its key differs from the last popped key, and moves only toward bucket 0, a
//! bounded number of times. Amortised O(1) per operation and sequential memory access,
//! where a binary heap of millions of events spends its time in cache misses.

/// Min-queue of `(key, item)` with unique keys, each pushed key >= the last popped one.
pub(crate) struct RadixQueue<T> {
    last: u128,
    buckets: Vec<Vec<(u128, T)>>,
    len: usize,
}

impl<T> RadixQueue<T> {
    pub(crate) fn new() -> Self {
        RadixQueue {
            last: 0,
            buckets: (0..129).map(|_| Vec::new()).collect(),
            len: 0,
        }
    }

    #[inline]
    fn bucket(&self, key: u128) -> usize {
        (128 - (key ^ self.last).leading_zeros()) as usize
    }

    /// Adds an item.
    ///
    /// # Panics
    /// If `key` is below the last popped key (time going back is a simulator bug).
    pub(crate) fn push(&mut self, key: u128, item: T) {
        assert!(key >= self.last, "event scheduled in the past");
        let b = self.bucket(key);
        self.buckets[b].push((key, item));
        self.len += 1;
    }

    /// Removes the item with the smallest key.
    pub(crate) fn pop(&mut self) -> Option<(u128, T)> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            let i = (1..self.buckets.len())
                .find(|&i| !self.buckets[i].is_empty())
                .expect("len > 0");
            let moved = std::mem::take(&mut self.buckets[i]);
            self.last = moved.iter().map(|(k, _)| *k).min().expect("non-empty");
            for (k, v) in moved {
                let b = self.bucket(k);
                debug_assert!(b < i);
                self.buckets[b].push((k, v));
            }
            // Give the emptied bucket its capacity back for later pushes.
        }
        self.len -= 1;
        self.buckets[0].pop()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimRng;

    #[test]
    fn pops_in_key_order_like_a_sorted_list() {
        let mut rng = SimRng::new(3);
        let mut q = RadixQueue::new();
        let mut reference = Vec::new();
        let mut now = 0u128;
        let mut order = 0u128;
        for step in 0..20_000 {
            if step % 3 != 2 {
                order += 1;
                let key = ((now + rng.below(1 << 20) as u128) << 40) | order;
                q.push(key, step);
                reference.push(key);
            } else if let Some((k, _)) = q.pop() {
                reference.sort_unstable();
                assert_eq!(k, reference.remove(0));
                now = k >> 40;
            }
            assert_eq!(q.len(), reference.len());
        }
        reference.sort_unstable();
        for expected in reference {
            assert_eq!(q.pop().map(|(k, _)| k), Some(expected));
        }
        assert!(q.pop().is_none());
    }
}
