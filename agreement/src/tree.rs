//! The agreement tree: an implicit k-ary heap over the participants, repaired locally
//! around the ranks a process knows to be dead.
//!
//! Positions `0..m` form a heap (parent of `p` is `(p-1)/k`). The arity `k` is a function
//! of the communicator size alone ([`arity_for`]), so every process lays out the same
//! tree: a star for small communicators (two hops instead of `2*ceil(log2 n)`), binary
//! beyond. In the default shape a
//! position is a rank; in the rebuilt shape the positions are the ranks not in an
//! `excluded` set (failures every process has agreed on), so the heap is balanced over the
//! survivors. On top of either, each process splices out the ranks it knows are dead:
//! - the parent of a live rank is its nearest live ancestor;
//! - the root is the smallest live position (all its ancestors are dead), and it adopts
//!   every live rank that has no live ancestor.
//!
//! Views built from different failure knowledge differ only around ranks that really are
//! dead, which is what the agreement relies on (see `era`).

use crate::types::{Rank, RankSet};

/// Which heap the participants are arranged in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TreeShape {
    /// Heap over all ranks of the communicator; dead ranks are spliced out.
    #[default]
    Lazy,
    /// Heap over the ranks not yet agreed-failed when the instance starts (balanced over the
    /// survivors); later failures are spliced out as in `Lazy`.
    Rebuilt,
}

/// Largest communicator laid out as a star (the root's children are every other rank).
/// Up to this size the root handles at most `STAR_MAX - 1` messages each way, cheaper
/// than the extra tree levels (each a message latency, or a context switch when ranks
/// share cores).
pub const STAR_MAX: u32 = 8;

/// The heap arity for a communicator of `n` ranks: a star up to [`STAR_MAX`], binary
/// beyond.
pub fn arity_for(n: u32) -> u32 {
    if n <= STAR_MAX {
        n.saturating_sub(1).max(2)
    } else {
        2
    }
}

/// One process's view of the tree: the heap layout plus the ranks it knows are dead.
#[derive(Clone, Copy, Debug)]
pub struct TreeView<'a> {
    /// Number of ranks in the communicator.
    n: u32,
    /// Children per heap position.
    arity: u32,
    /// Ranks left out of the heap layout (sorted); empty for the lazy shape.
    excluded: &'a RankSet,
    /// Ranks known dead, spliced out of the layout.
    dead: &'a RankSet,
}

impl<'a> TreeView<'a> {
    /// A view of `n` ranks laid out without `excluded`, with `dead` spliced out, in a
    /// heap of [`arity_for(n)`](arity_for).
    pub fn new(n: u32, excluded: &'a RankSet, dead: &'a RankSet) -> Self {
        Self::with_arity(n, arity_for(n), excluded, dead)
    }

    /// As [`new`](Self::new) with an explicit arity (at least 2).
    pub fn with_arity(n: u32, arity: u32, excluded: &'a RankSet, dead: &'a RankSet) -> Self {
        debug_assert!(excluded.len() < n as usize);
        debug_assert!(arity >= 2);
        TreeView {
            n,
            arity,
            excluded,
            dead,
        }
    }

    /// The heap position above `pos` (> 0).
    #[inline]
    fn up(&self, pos: u32) -> u32 {
        (pos - 1) / self.arity
    }

    /// Number of heap positions.
    #[inline]
    fn positions(&self) -> u32 {
        self.n - self.excluded.len() as u32
    }

    /// The rank at heap position `pos`.
    #[inline]
    fn rank_at(&self, pos: u32) -> Rank {
        if self.excluded.is_empty() {
            return Rank(pos);
        }
        // The pos-th rank not excluded: step over each excluded rank at or below it.
        let mut rank = pos;
        for e in self.excluded.iter() {
            if e.0 <= rank {
                rank += 1;
            } else {
                break;
            }
        }
        Rank(rank)
    }

    /// The heap position of `rank` (which must not be excluded).
    #[inline]
    fn pos_of(&self, rank: Rank) -> u32 {
        debug_assert!(!self.excluded.contains(rank));
        rank.0 - self.excluded.count_below(rank)
    }

    #[inline]
    fn live_at(&self, pos: u32) -> bool {
        !self.dead.contains(self.rank_at(pos))
    }

    /// Whether `rank` takes part in this tree (in range, not excluded, not known dead).
    pub fn is_member(&self, rank: Rank) -> bool {
        rank.0 < self.n && !self.excluded.contains(rank) && !self.dead.contains(rank)
    }

    /// The root: the live rank at the smallest position, or `None` if every rank is dead.
    pub fn root(&self) -> Option<Rank> {
        (0..self.positions())
            .map(|p| self.rank_at(p))
            .find(|r| !self.dead.contains(*r))
    }

    /// The parent of live `rank` in this view, or `None` when `rank` is the root.
    pub fn parent(&self, rank: Rank) -> Option<Rank> {
        let root = self.root()?;
        if rank == root {
            return None;
        }
        let mut pos = self.pos_of(rank);
        while pos > 0 {
            pos = self.up(pos);
            if self.live_at(pos) {
                return Some(self.rank_at(pos));
            }
        }
        // No live ancestor: the root adopts it.
        Some(root)
    }

    /// The children of live `rank` in this view, written into `out` (cleared first);
    /// `stack` is scratch space. Both are reused by callers so nothing is allocated once
    /// they have grown.
    pub fn children(&self, rank: Rank, out: &mut Vec<Rank>, stack: &mut Vec<u32>) {
        out.clear();
        stack.clear();
        let m = self.positions();
        let me = self.pos_of(rank);
        let k = self.arity as u64;
        let push_kids = |pos: u32, stack: &mut Vec<u32>| {
            let first = k * pos as u64 + 1;
            for c in (first..first + k).rev() {
                if c < m as u64 {
                    stack.push(c as u32);
                }
            }
        };
        push_kids(me, stack);
        if self.root() == Some(rank) && me != 0 {
            // The root also adopts every live rank whose ancestors are all dead: descend
            // from position 0 through dead positions only. The root itself is one of those
            // first live positions; it is skipped, so its own subtree is not entered twice.
            stack.push(0);
        }
        while let Some(pos) = stack.pop() {
            if pos == me {
                continue;
            }
            if self.live_at(pos) {
                out.push(self.rank_at(pos));
            } else {
                push_kids(pos, stack);
            }
        }
    }

    /// Whether `me` sits at the heap position right above `child` (its parent in the layout,
    /// failures aside): such a child sends its UP to `me` without being asked.
    pub fn parent_position_is(&self, child: Rank, me: Rank) -> bool {
        let pos = self.pos_of(child);
        pos > 0 && self.up(pos) == self.pos_of(me)
    }

    /// Whether an UP received from one of `got` already carries the contribution of
    /// `child`: true when `child` or one of its ancestors below `me` is in `got` (an
    /// ancestor gathers its whole subtree before sending UP).
    pub fn covered(&self, child: Rank, me: Rank, got: &[Rank]) -> bool {
        if got.contains(&child) {
            return true;
        }
        let me_pos = self.pos_of(me);
        let mut pos = self.pos_of(child);
        while pos > 0 {
            pos = self.up(pos);
            if pos == me_pos {
                return false;
            }
            if got.contains(&self.rank_at(pos)) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[u32]) -> RankSet {
        v.iter().map(|&r| Rank(r)).collect()
    }

    fn kids(view: &TreeView<'_>, r: u32) -> Vec<u32> {
        let (mut out, mut stack) = (Vec::new(), Vec::new());
        view.children(Rank(r), &mut out, &mut stack);
        let mut v: Vec<u32> = out.iter().map(|r| r.0).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn failure_free_heap() {
        let (e, d) = (RankSet::new(), RankSet::new());
        let v = TreeView::with_arity(7, 2, &e, &d);
        assert_eq!(v.root(), Some(Rank(0)));
        assert_eq!(v.parent(Rank(0)), None);
        assert_eq!(v.parent(Rank(6)), Some(Rank(2)));
        assert_eq!(kids(&v, 1), vec![3, 4]);
        assert_eq!(kids(&v, 3), Vec::<u32>::new());
    }

    #[test]
    fn dead_inner_node_is_spliced() {
        let e = RankSet::new();
        let d = set(&[1]);
        let v = TreeView::with_arity(10, 2, &e, &d);
        assert_eq!(v.parent(Rank(3)), Some(Rank(0)));
        assert_eq!(v.parent(Rank(8)), Some(Rank(3)));
        assert_eq!(kids(&v, 0), vec![2, 3, 4]);
    }

    #[test]
    fn dead_root_smallest_live_child_adopts_siblings() {
        let e = RankSet::new();
        let d = set(&[0]);
        let v = TreeView::with_arity(7, 2, &e, &d);
        assert_eq!(v.root(), Some(Rank(1)));
        assert_eq!(v.parent(Rank(2)), Some(Rank(1)));
        assert_eq!(kids(&v, 1), vec![2, 3, 4]);
        assert_eq!(kids(&v, 2), vec![5, 6]);
        // A chain of dead roots.
        let d = set(&[0, 1, 2]);
        let v = TreeView::with_arity(7, 2, &e, &d);
        assert_eq!(v.root(), Some(Rank(3)));
        assert_eq!(kids(&v, 3), vec![4, 5, 6]);
        assert_eq!(v.parent(Rank(6)), Some(Rank(3)));
    }

    #[test]
    fn rebuilt_shape_skips_excluded_ranks() {
        let e = set(&[0, 2]);
        let d = RankSet::new();
        let v = TreeView::with_arity(7, 2, &e, &d);
        // Positions 0..5 are ranks 1,3,4,5,6.
        assert_eq!(v.root(), Some(Rank(1)));
        assert_eq!(kids(&v, 1), vec![3, 4]);
        assert_eq!(kids(&v, 3), vec![5, 6]);
        assert_eq!(v.parent(Rank(6)), Some(Rank(3)));
        assert!(!v.is_member(Rank(2)));
    }

    #[test]
    fn small_communicators_are_stars_larger_ones_binary() {
        assert_eq!(arity_for(1), 2);
        assert_eq!(arity_for(2), 2);
        assert_eq!(arity_for(4), 3);
        assert_eq!(arity_for(STAR_MAX), STAR_MAX - 1);
        assert_eq!(arity_for(STAR_MAX + 1), 2);
        let (e, d) = (RankSet::new(), RankSet::new());
        let v = TreeView::new(4, &e, &d);
        assert_eq!(kids(&v, 0), vec![1, 2, 3]);
        assert_eq!(v.parent(Rank(3)), Some(Rank(0)));
        // The root dies: the smallest live rank adopts the others.
        let d = set(&[0]);
        let v = TreeView::new(4, &e, &d);
        assert_eq!(v.root(), Some(Rank(1)));
        assert_eq!(kids(&v, 1), vec![2, 3]);
        // A ternary heap of 10: 0 -> 1,2,3; 1 -> 4,5,6; 2 -> 7,8,9.
        let d = RankSet::new();
        let v = TreeView::with_arity(10, 3, &e, &d);
        assert_eq!(kids(&v, 1), vec![4, 5, 6]);
        assert_eq!(v.parent(Rank(9)), Some(Rank(2)));
        assert!(v.parent_position_is(Rank(8), Rank(2)));
        let d = set(&[2]);
        let v = TreeView::with_arity(10, 3, &e, &d);
        assert_eq!(kids(&v, 0), vec![1, 3, 7, 8, 9]);
    }

    #[test]
    fn every_live_rank_reaches_the_root_and_is_its_parents_child() {
        // Exhaustive over dead sets of 8 ranks and several arities: parent/children
        // views are consistent.
        let e = RankSet::new();
        for (arity, mask) in [2u32, 3, 4, 7]
            .into_iter()
            .flat_map(|a| (0u32..256).map(move |m| (a, m)))
        {
            let d: RankSet = (0..8).filter(|b| mask & (1 << b) != 0).map(Rank).collect();
            let v = TreeView::with_arity(8, arity, &e, &d);
            let Some(root) = v.root() else { continue };
            let mut seen = 0;
            for r in (0..8).map(Rank).filter(|r| !d.contains(*r)) {
                seen += 1;
                if r == root {
                    continue;
                }
                let p = v.parent(r).unwrap();
                assert!(kids(&v, p.0).contains(&r.0), "mask {mask:#x} rank {r:?}");
            }
            let total: usize = (0..8)
                .filter(|r| !d.contains(Rank(*r)))
                .map(|r| kids(&v, r).len())
                .sum();
            assert_eq!(total + 1, seen, "mask {mask:#x}");
        }
    }

    #[test]
    fn coverage_through_dead_ancestor() {
        let e = RankSet::new();
        let d = set(&[1]);
        let v = TreeView::with_arity(10, 2, &e, &d);
        // 0 got UP from 1 before 1 died: 3 and 4 are covered by it.
        assert!(v.covered(Rank(3), Rank(0), &[Rank(1)]));
        assert!(!v.covered(Rank(3), Rank(0), &[Rank(2)]));
        assert!(v.covered(Rank(2), Rank(0), &[Rank(2)]));
    }
}
