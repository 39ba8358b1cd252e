//! The unexpected-message queue of one context.
//!
//! Every waiting message is on four FIFO lists at once, all in arrival order:
//!
//! | link | list | serves receives of the form |
//! |---|---|---|
//! | 0 | `exact[(source, tag)]` | (rank, tag) |
//! | 1 | `by_source[source]` | (rank, ANY_TAG) |
//! | 2 | `by_tag[tag]` | (ANY_SOURCE, tag) |
//! | 3 | `all` | (ANY_SOURCE, ANY_TAG) |
//!
//! So the earliest message that fits a receive is the head of the one list its selector
//! names, and taking it unlinks it from all four in O(1). Per-sender non-overtaking holds
//! because each list keeps arrival order and a transport delivers one sender's messages
//! in the order they were sent (its contract, see `docs/matching.md`).

use crate::list::{pair_key, unlink_keyed, Link, Linked, List, PairMap, Slab, TagMap};
use crate::types::{Envelope, Rank, RecvSpec, SourceSpec, TagSpec};

const EXACT: usize = 0;
const BY_SOURCE: usize = 1;
const BY_TAG: usize = 2;
const ALL: usize = 3;

#[derive(Debug)]
struct Node<P> {
    env: Envelope<P>,
    links: [Link; 4],
}

impl<P> Linked for Node<P> {
    fn link(&self, k: usize) -> &Link {
        &self.links[k]
    }
    fn link_mut(&mut self, k: usize) -> &mut Link {
        &mut self.links[k]
    }
}

/// Unexpected messages of one context (see the module docs).
#[derive(Debug)]
pub(crate) struct UnexpectedQueue<P> {
    slab: Slab<Node<P>>,
    exact: PairMap<List>,
    by_source: Vec<List>,
    by_tag: TagMap<List>,
    all: List,
}

impl<P> UnexpectedQueue<P> {
    /// An empty queue for a communicator of `size` ranks.
    pub(crate) fn new(size: u32) -> Self {
        UnexpectedQueue {
            slab: Slab::new(),
            exact: PairMap::default(),
            by_source: vec![List::default(); size as usize],
            by_tag: TagMap::default(),
            all: List::default(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    /// Appends a message whose source is in range.
    pub(crate) fn push(&mut self, env: Envelope<P>) {
        let (s, t) = (env.source.0 as usize, env.tag.0);
        let slot = self.slab.insert(Node {
            env,
            links: [Link::UNLINKED; 4],
        });
        let slab = &mut self.slab;
        self.exact
            .entry(pair_key(s as u32, t))
            .or_default()
            .push_back(slab, slot, EXACT);
        self.by_source[s].push_back(slab, slot, BY_SOURCE);
        self.by_tag
            .entry(t)
            .or_default()
            .push_back(slab, slot, BY_TAG);
        self.all.push_back(slab, slot, ALL);
    }

    fn find(&self, spec: RecvSpec) -> Option<u32> {
        if self.slab.len() == 0 {
            // The common case of a receive posted before its message: no hashing.
            return None;
        }
        match (spec.source, spec.tag) {
            (SourceSpec::Rank(r), TagSpec::Tag(t)) => self.exact.get(&pair_key(r.0, t.0))?.first(),
            (SourceSpec::Rank(r), TagSpec::Any) => self.by_source.get(r.0 as usize)?.first(),
            (SourceSpec::Any, TagSpec::Tag(t)) => self.by_tag.get(&t.0)?.first(),
            (SourceSpec::Any, TagSpec::Any) => self.all.first(),
        }
    }

    /// The earliest message that fits `spec`, left in the queue.
    pub(crate) fn peek(&self, spec: RecvSpec) -> Option<&Envelope<P>> {
        self.find(spec).map(|slot| &self.slab.at(slot).env)
    }

    /// Takes out the earliest message that fits `spec`.
    pub(crate) fn take(&mut self, spec: RecvSpec) -> Option<Envelope<P>> {
        let slot = self.find(spec)?;
        let (s, t) = {
            let e = &self.slab.at(slot).env;
            (e.source.0 as usize, e.tag.0)
        };
        unlink_keyed(
            &mut self.exact,
            pair_key(s as u32, t),
            &mut self.slab,
            slot,
            EXACT,
        );
        self.by_source[s].unlink(&mut self.slab, slot, BY_SOURCE);
        unlink_keyed(&mut self.by_tag, t, &mut self.slab, slot, BY_TAG);
        self.all.unlink(&mut self.slab, slot, ALL);
        Some(self.slab.remove(slot).env)
    }

    /// Takes out the earliest message from `source`, whatever its tag.
    pub(crate) fn take_from(&mut self, source: Rank) -> Option<Envelope<P>> {
        self.take(RecvSpec {
            source: SourceSpec::Rank(source),
            tag: TagSpec::Any,
        })
    }

    /// Whether a message from `source` is waiting.
    pub(crate) fn has_from(&self, source: Rank) -> bool {
        self.by_source
            .get(source.0 as usize)
            .is_some_and(|l| !l.is_empty())
    }

    /// Takes out every message, in arrival order.
    pub(crate) fn drain(&mut self) -> Vec<Envelope<P>> {
        let any = RecvSpec {
            source: SourceSpec::Any,
            tag: TagSpec::Any,
        };
        std::iter::from_fn(|| self.take(any)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ContextId, Tag};

    fn env(s: u32, t: u32, id: usize) -> Envelope<usize> {
        Envelope {
            context: ContextId(1),
            source: Rank(s),
            tag: Tag(t),
            len: 0,
            payload: id,
        }
    }

    fn spec(s: Option<u32>, t: Option<u32>) -> RecvSpec {
        RecvSpec::new(s.map(Rank), t.map(Tag))
    }

    #[test]
    fn each_selector_takes_the_earliest_fitting_message() {
        let mut q = UnexpectedQueue::new(3);
        for (i, (s, t)) in [(0, 1), (1, 2), (1, 1), (2, 1), (1, 2)]
            .into_iter()
            .enumerate()
        {
            q.push(env(s, t, i));
        }
        assert_eq!(q.peek(spec(Some(1), Some(2))).unwrap().payload, 1);
        assert_eq!(q.take(spec(Some(1), Some(2))).unwrap().payload, 1);
        assert_eq!(q.take(spec(Some(1), None)).unwrap().payload, 2);
        assert_eq!(q.take(spec(None, Some(1))).unwrap().payload, 0);
        assert_eq!(q.take(spec(None, None)).unwrap().payload, 3);
        assert!(q.take(spec(Some(0), None)).is_none());
        assert!(q.has_from(Rank(1)));
        assert!(!q.has_from(Rank(2)));
        assert!(!q.has_from(Rank(9)), "out of range is simply absent");
        assert_eq!(q.take(spec(None, Some(2))).unwrap().payload, 4);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn drain_keeps_arrival_order() {
        let mut q = UnexpectedQueue::new(2);
        for i in 0..6 {
            q.push(env((i % 2) as u32, (i % 3) as u32, i));
        }
        q.take(spec(Some(1), Some(0)));
        let ids: Vec<usize> = q.drain().into_iter().map(|e| e.payload).collect();
        assert_eq!(ids, [0, 1, 2, 4, 5]);
        assert_eq!(q.len(), 0);
    }
}
