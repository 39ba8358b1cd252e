//! The posted-receive queue of one context.
//!
//! A receive sits on exactly one of four FIFO lists, chosen by its selector:
//!
//! | selector | list |
//! |---|---|
//! | (rank, tag) | `exact[(rank, tag)]` |
//! | (rank, ANY_TAG) | `by_source[rank]` |
//! | (ANY_SOURCE, tag) | `by_tag[tag]` |
//! | (ANY_SOURCE, ANY_TAG) | `any` |
//!
//! Every receive carries its posting number. A message `(s, t)` can only match the head
//! of `exact[(s, t)]`, `by_source[s]`, `by_tag[t]` or `any` (each list is in posting order
//! and every node on it fits), so the earliest posted receive that fits is the head with
//! the smallest posting number: two hash lookups and four comparisons, whatever the
//! queue's length.
//!
//! The common case of a blocking receive (or a ping-pong) is one posted receive at a
//! time: a receive posted into an empty queue stays *solo*, on no list, and a message
//! is checked against it alone (no hashing, no list to link or unlink). Posting a
//! second receive links the solo one first (it has the smaller posting number, so the
//! lists keep posting order).

use crate::list::{pair_key, unlink_keyed, Link, Linked, List, PairMap, Slab, TagMap};
use crate::types::{Rank, RecvSpec, SourceSpec, Tag, TagSpec};

/// One posted receive.
#[derive(Debug)]
pub(crate) struct PostedNode<R> {
    pub(crate) seq: u64,
    pub(crate) spec: RecvSpec,
    pub(crate) token: R,
    link: Link,
}

impl<R> Linked for PostedNode<R> {
    fn link(&self, _k: usize) -> &Link {
        &self.link
    }
    fn link_mut(&mut self, _k: usize) -> &mut Link {
        &mut self.link
    }
}

/// Posted receives of one context (see the module docs).
#[derive(Debug)]
pub(crate) struct PostedQueue<R> {
    slab: Slab<PostedNode<R>>,
    exact: PairMap<List>,
    by_source: Vec<List>,
    by_tag: TagMap<List>,
    any: List,
    next_seq: u64,
    /// The only posted receive, when it is on no list (see the module docs): set only
    /// while `slab` holds exactly that node.
    solo: Option<u32>,
}

impl<R> PostedQueue<R> {
    /// An empty queue for a communicator of `size` ranks.
    pub(crate) fn new(size: u32) -> Self {
        PostedQueue {
            slab: Slab::new(),
            exact: PairMap::default(),
            by_source: vec![List::default(); size as usize],
            by_tag: TagMap::default(),
            any: List::default(),
            next_seq: 0,
            solo: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    /// Appends a receive (its source is in range); returns `(slot, posting number)`.
    pub(crate) fn push(&mut self, spec: RecvSpec, token: R) -> (u32, u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = self.slab.insert(PostedNode {
            seq,
            spec,
            token,
            link: Link::UNLINKED,
        });
        if self.slab.len() == 1 {
            self.solo = Some(slot);
            return (slot, seq);
        }
        if let Some(first) = self.solo.take() {
            self.link(first);
        }
        self.link(slot);
        (slot, seq)
    }

    /// Puts the node in `slot` at the tail of the list its selector names.
    fn link(&mut self, slot: u32) {
        let spec = self.slab.at(slot).spec;
        let list = match (spec.source, spec.tag) {
            (SourceSpec::Rank(r), TagSpec::Tag(t)) => {
                self.exact.entry(pair_key(r.0, t.0)).or_default()
            }
            (SourceSpec::Rank(r), TagSpec::Any) => &mut self.by_source[r.0 as usize],
            (SourceSpec::Any, TagSpec::Tag(t)) => self.by_tag.entry(t.0).or_default(),
            (SourceSpec::Any, TagSpec::Any) => &mut self.any,
        };
        list.push_back(&mut self.slab, slot, 0);
    }

    /// The slot of the earliest posted receive that fits a message `(source, tag)`.
    fn earliest(&self, source: Rank, tag: Tag) -> Option<u32> {
        if let Some(slot) = self.solo {
            return self.slab.at(slot).spec.accepts(source, tag).then_some(slot);
        }
        if self.slab.len() == 0 {
            return None;
        }
        let s = source.0 as usize;
        let heads = [
            self.exact
                .get(&pair_key(source.0, tag.0))
                .and_then(List::first),
            self.by_source[s].first(),
            self.by_tag.get(&tag.0).and_then(List::first),
            self.any.first(),
        ];
        heads
            .into_iter()
            .flatten()
            .min_by_key(|&slot| self.slab.at(slot).seq)
    }

    /// Takes out the earliest posted receive that fits a message `(source, tag)`.
    pub(crate) fn take_match(&mut self, source: Rank, tag: Tag) -> Option<PostedNode<R>> {
        let slot = self.earliest(source, tag)?;
        Some(self.remove(slot))
    }

    /// The token of the receive [`take_match`](Self::take_match) would take (left posted).
    pub(crate) fn peek_match(&self, source: Rank, tag: Tag) -> Option<&R> {
        let slot = self.earliest(source, tag)?;
        Some(&self.slab.at(slot).token)
    }

    /// Whether a posted receive fits a message `(source, tag)` (left posted).
    pub(crate) fn has_match(&self, source: Rank, tag: Tag) -> bool {
        if self.solo.is_some() {
            return self.earliest(source, tag).is_some();
        }
        let s = source.0 as usize;
        self.exact.contains_key(&pair_key(source.0, tag.0))
            || !self.by_source[s].is_empty()
            || self.by_tag.contains_key(&tag.0)
            || !self.any.is_empty()
    }

    /// Takes out the receive in `slot` if it is still the one posted as `seq`.
    pub(crate) fn take(&mut self, slot: u32, seq: u64) -> Option<PostedNode<R>> {
        match self.slab.get(slot) {
            Some(n) if n.seq == seq => Some(self.remove(slot)),
            _ => None,
        }
    }

    fn remove(&mut self, slot: u32) -> PostedNode<R> {
        if self.solo == Some(slot) {
            self.solo = None;
            return self.slab.remove(slot);
        }
        let spec = self.slab.at(slot).spec;
        match (spec.source, spec.tag) {
            (SourceSpec::Rank(r), TagSpec::Tag(t)) => {
                unlink_keyed(&mut self.exact, pair_key(r.0, t.0), &mut self.slab, slot, 0)
            }
            (SourceSpec::Rank(r), TagSpec::Any) => {
                self.by_source[r.0 as usize].unlink(&mut self.slab, slot, 0)
            }
            (SourceSpec::Any, TagSpec::Tag(t)) => {
                unlink_keyed(&mut self.by_tag, t.0, &mut self.slab, slot, 0)
            }
            (SourceSpec::Any, TagSpec::Any) => self.any.unlink(&mut self.slab, slot, 0),
        }
        self.slab.remove(slot)
    }

    /// Takes out every receive naming `source`, in posting order.
    pub(crate) fn take_from_source(&mut self, source: Rank) -> Vec<PostedNode<R>> {
        if let Some(slot) = self.solo {
            return if self.slab.at(slot).spec.source == SourceSpec::Rank(source) {
                vec![self.remove(slot)]
            } else {
                Vec::new()
            };
        }
        let s = source.0 as usize;
        let mut slots: Vec<u32> = self.by_source[s].slots(&self.slab, 0).collect();
        // Rare path (a failure): scan the exact table for the rank's entries.
        for (key, list) in &self.exact {
            if key >> 32 == u64::from(source.0) {
                slots.extend(list.slots(&self.slab, 0));
            }
        }
        slots.sort_by_key(|&slot| self.slab.at(slot).seq);
        slots.into_iter().map(|slot| self.remove(slot)).collect()
    }

    /// The wildcard-source receives, in posting order.
    pub(crate) fn any_source(&self) -> Vec<&PostedNode<R>> {
        if let Some(slot) = self.solo {
            let node = self.slab.at(slot);
            return if node.spec.source == SourceSpec::Any {
                vec![node]
            } else {
                Vec::new()
            };
        }
        let mut slots: Vec<u32> = self.any.slots(&self.slab, 0).collect();
        for list in self.by_tag.values() {
            slots.extend(list.slots(&self.slab, 0));
        }
        slots.sort_by_key(|&slot| self.slab.at(slot).seq);
        slots.into_iter().map(|slot| self.slab.at(slot)).collect()
    }

    /// Takes out every receive, in posting order.
    pub(crate) fn drain(&mut self) -> Vec<PostedNode<R>> {
        self.solo = None;
        self.exact.clear();
        self.by_source.iter_mut().for_each(|l| *l = List::default());
        self.by_tag.clear();
        self.any = List::default();
        let mut all: Vec<PostedNode<R>> = self.slab.drain().collect();
        all.sort_by_key(|n| n.seq);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: Option<u32>, t: Option<u32>) -> RecvSpec {
        RecvSpec::new(s.map(Rank), t.map(Tag))
    }

    #[test]
    fn earliest_fitting_receive_wins_across_lists() {
        let mut q = PostedQueue::new(4);
        q.push(spec(None, None), "any");
        q.push(spec(Some(1), Some(5)), "exact");
        q.push(spec(None, Some(5)), "by_tag");
        q.push(spec(Some(1), None), "by_source");
        let order: Vec<&str> = (0..4)
            .map(|_| q.take_match(Rank(1), Tag(5)).unwrap().token)
            .collect();
        assert_eq!(order, ["any", "exact", "by_tag", "by_source"]);
        assert!(q.take_match(Rank(1), Tag(5)).is_none());
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn non_fitting_receives_are_skipped() {
        let mut q = PostedQueue::new(4);
        q.push(spec(Some(2), Some(5)), "other source");
        q.push(spec(None, Some(6)), "other tag");
        q.push(spec(Some(1), Some(5)), "fits");
        assert_eq!(q.take_match(Rank(1), Tag(5)).unwrap().token, "fits");
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn a_solo_receive_keeps_its_place_when_others_are_posted() {
        let mut q = PostedQueue::new(4);
        let (s1, q1) = q.push(spec(None, None), "solo");
        assert_eq!(q.solo, Some(s1), "the only receive is on no list");
        assert!(q.has_match(Rank(3), Tag(9)));
        assert_eq!(q.peek_match(Rank(3), Tag(9)), Some(&"solo"));
        // A second receive links the solo one first: it still matches first.
        q.push(spec(Some(1), Some(5)), "exact");
        assert_eq!(q.solo, None);
        assert_eq!(q.take_match(Rank(1), Tag(5)).unwrap().token, "solo");
        assert_eq!(q.take_match(Rank(1), Tag(5)).unwrap().token, "exact");
        assert_eq!(q.len(), 0);
        // Solo again after the queue emptied; a stale id does not take it.
        let (s2, q2) = q.push(spec(Some(2), None), "again");
        assert_eq!(q.solo, Some(s2));
        assert!(
            q.take(s1, q1).is_none(),
            "a stale id never takes the new receive"
        );
        assert!(q.take_match(Rank(1), Tag(0)).is_none(), "other source");
        assert!(q.any_source().is_empty());
        assert!(q.take_from_source(Rank(1)).is_empty());
        assert_eq!(q.take_from_source(Rank(2))[0].token, "again");
        assert_eq!(q.solo, None);
        assert_eq!(q.len(), 0);
        let (s3, q3) = q.push(spec(None, Some(4)), "wild");
        assert_eq!(q.any_source()[0].token, "wild");
        assert_eq!(q.take(s3, q3).unwrap().token, "wild");
        q.push(spec(None, Some(4)), "drained");
        assert_eq!(q.drain()[0].token, "drained");
        assert_eq!(q.solo, None);
        assert!(q.take_match(Rank(0), Tag(4)).is_none());
        let _ = q2;
    }

    #[test]
    fn take_checks_the_posting_number() {
        let mut q = PostedQueue::new(2);
        let (slot, seq) = q.push(spec(Some(0), Some(1)), 1);
        assert!(q.take(slot, seq + 1).is_none());
        assert_eq!(q.take(slot, seq).unwrap().token, 1);
        let (slot2, seq2) = q.push(spec(Some(0), Some(1)), 2);
        assert_eq!(slot2, slot, "slot reused");
        assert!(
            q.take(slot, seq).is_none(),
            "a stale id never names the new receive"
        );
        assert_eq!(q.take(slot2, seq2).unwrap().token, 2);
    }

    #[test]
    fn failure_and_wildcard_views() {
        let mut q = PostedQueue::new(3);
        q.push(spec(Some(2), Some(1)), "a");
        q.push(spec(None, Some(1)), "w1");
        q.push(spec(Some(2), None), "b");
        q.push(spec(None, None), "w2");
        q.push(spec(Some(1), None), "c");
        let w: Vec<&str> = q.any_source().iter().map(|n| n.token).collect();
        assert_eq!(w, ["w1", "w2"]);
        let dead: Vec<&str> = q
            .take_from_source(Rank(2))
            .into_iter()
            .map(|n| n.token)
            .collect();
        assert_eq!(dead, ["a", "b"]);
        let rest: Vec<&str> = q.drain().into_iter().map(|n| n.token).collect();
        assert_eq!(rest, ["w1", "w2", "c"]);
        assert!(q.take_match(Rank(1), Tag(1)).is_none());
    }
}
