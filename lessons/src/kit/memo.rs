//! The last value a computation gave, kept with the settings it ran with:
//! a page that recomputes from its settings every frame computes only when
//! they change.

/// `V` computed from `K`, for the last `K` asked.
pub struct Memo<K, V> {
    last: Option<(K, V)>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Self { last: None }
    }
}

impl<K: PartialEq + Clone, V> Memo<K, V> {
    /// The value for `key`: the kept one, or `compute(key)` when the key changed.
    pub fn get(&mut self, key: &K, compute: impl FnOnce(&K) -> V) -> &V {
        if self.last.as_ref().is_none_or(|(k, _)| k != key) {
            self.last = Some((key.clone(), compute(key)));
        }
        match &self.last {
            Some((_, v)) => v,
            None => unreachable!("just computed"),
        }
    }

    /// The last value computed, if any.
    pub fn last(&self) -> Option<&V> {
        self.last.as_ref().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_computes_only_when_the_key_changes() {
        let mut memo = Memo::<u32, u32>::default();
        let mut calls = 0;
        for key in [1, 1, 2, 2, 1] {
            memo.get(&key, |k| {
                calls += 1;
                k * 10
            });
        }
        assert_eq!(calls, 3);
        assert_eq!(memo.last(), Some(&10));
    }
}
