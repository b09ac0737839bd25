//! Type variables solved by unification (union-find), plus one-way *flows* for values
//! passed to arguments.
//!
//! Every local slot, every method's return value and every `aload` result is a variable;
//! [`INT`] and [`REF`] are the two variables standing for the concrete types. Unifying two
//! variables merges their classes; a class holding both `INT` and `REF` is a type error.
//! A flow `v -> a` (a value passed as an argument) does not merge: it forces `v` to `a`'s
//! type once `a` has one, so an argument the callee never constrains accepts either type.

use std::collections::HashMap;

use crate::isa::Ty;

/// A type variable.
pub(super) type Var = u32;
/// The variable standing for `int`.
pub(super) const INT: Var = 0;
/// The variable standing for `ref`.
pub(super) const REF: Var = 1;

/// The variable standing for a concrete type.
pub(super) fn concrete(ty: Ty) -> Var {
    match ty {
        Ty::Ref => REF,
        Ty::Int | Ty::Any => INT,
    }
}

/// A value `from` passed at call site `site` (an index the caller keeps).
#[derive(Clone, Copy, Debug)]
pub(super) struct Flow {
    pub from: Var,
    pub site: u32,
}

/// Two classes with different concrete types met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Mismatch {
    pub found: Ty,
    pub expected: Ty,
}

pub(super) struct Unifier {
    parent: Vec<Var>,
    rank: Vec<u8>,
    /// The concrete type of a class, kept at its root.
    solution: Vec<Option<Ty>>,
    /// Flows into a class without a type yet, kept at its root (few variables have any).
    pending: HashMap<Var, Vec<Flow>>,
    /// Flows whose target class just got a type, still to apply.
    queue: Vec<(Flow, Ty)>,
    /// Flows that turned out to pass a value of the wrong type.
    pub flow_errors: Vec<(Flow, Mismatch)>,
}

impl Unifier {
    /// A unifier with `INT`, `REF` and `n` fresh variables (numbered from 2).
    pub fn new(n: usize) -> Self {
        let total = n + 2;
        let mut solution = vec![None; total];
        solution[INT as usize] = Some(Ty::Int);
        solution[REF as usize] = Some(Ty::Ref);
        Unifier {
            parent: (0..total as Var).collect(),
            rank: vec![0; total],
            solution,
            pending: HashMap::new(),
            queue: Vec::new(),
            flow_errors: Vec::new(),
        }
    }

    pub fn fresh(&mut self) -> Var {
        let v = self.parent.len() as Var;
        self.parent.push(v);
        self.rank.push(0);
        self.solution.push(None);
        v
    }

    fn find(&mut self, mut v: Var) -> Var {
        while self.parent[v as usize] != v {
            let grand = self.parent[self.parent[v as usize] as usize];
            self.parent[v as usize] = grand;
            v = grand;
        }
        v
    }

    /// The type of `v` now: `Any` while its class has none.
    pub fn solve(&mut self, v: Var) -> Ty {
        let root = self.find(v);
        self.solution[root as usize].unwrap_or(Ty::Any)
    }

    /// Makes `a` and `b` the same type. On a mismatch, `found` is `a`'s type.
    pub fn unify(&mut self, a: Var, b: Var) -> Result<(), Mismatch> {
        let result = self.merge(a, b);
        self.drain();
        result
    }

    /// Records that `from` is passed where `to` is expected.
    pub fn flow(&mut self, from: Var, to: Var, site: u32) -> Result<(), Mismatch> {
        let root = self.find(to);
        match self.solution[root as usize] {
            Some(ty) => self.unify(from, concrete(ty)),
            None => {
                self.pending
                    .entry(root)
                    .or_default()
                    .push(Flow { from, site });
                Ok(())
            }
        }
    }

    fn merge(&mut self, a: Var, b: Var) -> Result<(), Mismatch> {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return Ok(());
        }
        let (sa, sb) = (self.solution[ra as usize], self.solution[rb as usize]);
        if let (Some(found), Some(expected)) = (sa, sb) {
            if found != expected {
                return Err(Mismatch { found, expected });
            }
        }
        let (root, child) = if self.rank[ra as usize] < self.rank[rb as usize] {
            (rb, ra)
        } else {
            (ra, rb)
        };
        if self.rank[ra as usize] == self.rank[rb as usize] {
            self.rank[root as usize] = self.rank[root as usize].saturating_add(1);
        }
        self.parent[child as usize] = root;
        let solution = sa.or(sb);
        self.solution[root as usize] = solution;
        let moved = self.pending.remove(&child).unwrap_or_default();
        match solution {
            Some(ty) => {
                let rest = self.pending.remove(&root).unwrap_or_default();
                self.queue
                    .extend(moved.into_iter().chain(rest).map(|f| (f, ty)));
            }
            None if !moved.is_empty() => self.pending.entry(root).or_default().extend(moved),
            None => {}
        }
        Ok(())
    }

    /// Applies queued flows; iterative so long call chains cannot exhaust the stack.
    fn drain(&mut self) {
        while let Some((flow, ty)) = self.queue.pop() {
            if let Err(m) = self.merge(flow.from, concrete(ty)) {
                self.flow_errors.push((flow, m));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unification_and_conflict() {
        let mut u = Unifier::new(3);
        let (a, b, c) = (2, 3, 4);
        u.unify(a, b).unwrap();
        assert_eq!(u.solve(a), Ty::Any);
        u.unify(b, REF).unwrap();
        assert_eq!(u.solve(a), Ty::Ref);
        assert_eq!(
            u.unify(a, INT),
            Err(Mismatch {
                found: Ty::Ref,
                expected: Ty::Int
            })
        );
        assert_eq!(u.solve(c), Ty::Any);
    }

    #[test]
    fn flows_apply_only_once_the_target_is_typed() {
        let mut u = Unifier::new(3);
        let (arg, int_value, ref_value) = (2, 3, 4);
        u.unify(int_value, INT).unwrap();
        u.unify(ref_value, REF).unwrap();
        // An untyped argument accepts both.
        u.flow(int_value, arg, 0).unwrap();
        u.flow(ref_value, arg, 1).unwrap();
        assert!(u.flow_errors.is_empty());
        // Typing it later reports the call that passed the other type.
        u.unify(arg, INT).unwrap();
        assert_eq!(u.flow_errors.len(), 1);
        assert_eq!(u.flow_errors[0].0.site, 1);
    }

    #[test]
    fn flows_propagate_types_back_to_callers() {
        let mut u = Unifier::new(2);
        let (caller_value, arg) = (2, 3);
        u.flow(caller_value, arg, 0).unwrap();
        u.unify(arg, REF).unwrap();
        assert_eq!(u.solve(caller_value), Ty::Ref);
    }
}
