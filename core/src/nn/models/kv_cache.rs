//! Incremental decoding with a KV cache: at each new token an attention
//! layer needs the keys and values of every earlier token, which do not
//! change, so they are kept instead of recomputed. A step then costs one
//! row of attention instead of the whole causal matrix; the cache grows by
//! `2 · heads · head_dim` values a token ([`crate::memory::kv_cache_bytes`],
//! the formula the memory calculator uses, which the buffers here are held to).
//! The inference lesson's generator keeps the whole character model's K/V
//! in the same cache and attends with [`KvCache::attend`].

use crate::autograd::{Graph, Real, Tensor, matmul};

/// One causal self-attention layer: `[d, d]` projections for queries, keys
/// and values, split into `heads` heads of `d / heads`.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionLayer<T> {
    pub wq: Tensor<T>,
    pub wk: Tensor<T>,
    pub wv: Tensor<T>,
    pub heads: usize,
}

/// The keys and values of the tokens so far, row after row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KvCache<T> {
    keys: Vec<T>,
    values: Vec<T>,
    width: usize,
}

impl<T: Real> KvCache<T> {
    pub fn new(width: usize) -> Self {
        Self {
            keys: Vec::new(),
            values: Vec::new(),
            width,
        }
    }

    /// Tokens cached.
    pub fn tokens(&self) -> usize {
        self.keys.len() / self.width.max(1)
    }

    /// Bytes the cache's buffers hold (what is kept, not what is reserved).
    pub fn bytes(&self) -> u64 {
        ((self.keys.len() + self.values.len()) * std::mem::size_of::<T>()) as u64
    }

    pub fn width(&self) -> usize {
        self.width
    }

    /// Appends the keys and values of whole rows (`[n, width]` each).
    pub fn append(&mut self, keys: &[T], values: &[T]) {
        debug_assert_eq!(keys.len(), values.len());
        self.keys.extend_from_slice(keys);
        self.values.extend_from_slice(values);
    }

    /// Forgets every token after the first `tokens` (a speculative pass's
    /// rejected proposals).
    pub fn truncate(&mut self, tokens: usize) {
        let len = tokens * self.width;
        self.keys.truncate(len);
        self.values.truncate(len);
    }

    /// One query row (`width` values, split into `heads` heads) attending,
    /// softmax(q·kᵀ/√(width/heads))·v head by head, over the first `seen`
    /// cached tokens (a causal query sees itself and those before it).
    pub fn attend(&self, query: &[T], seen: usize, heads: usize) -> Vec<T> {
        let d = self.width;
        let dh = d / heads;
        let scale = T::from_f64(1.0 / (dh as f64).sqrt());
        let mut out = vec![T::ZERO; d];
        let mut scores = Vec::with_capacity(seen);
        for h in 0..heads {
            let cols = h * dh..(h + 1) * dh;
            scores.clear();
            scores.extend((0..seen).map(|j| {
                let key = &self.keys[j * d..(j + 1) * d][cols.clone()];
                query[cols.clone()]
                    .iter()
                    .zip(key)
                    .fold(T::ZERO, |s, (a, b)| s + *a * *b)
                    * scale
            }));
            let max = scores.iter().fold(scores[0], |m, s| m.max(*s));
            let weights: Vec<T> = scores.iter().map(|s| (*s - max).exp()).collect();
            let total = weights.iter().fold(T::ZERO, |s, w| s + *w);
            for (j, w) in weights.iter().enumerate() {
                let value = &self.values[j * d..(j + 1) * d];
                for c in cols.clone() {
                    out[c] += *w / total * value[c];
                }
            }
        }
        out
    }
}

impl<T: Real> AttentionLayer<T> {
    fn width(&self) -> usize {
        self.wq.rows_cols().1
    }

    /// The whole sequence `x` (`[tokens, d]`) at once, causally masked: the
    /// reference a cached decode must reproduce row by row.
    pub fn full(&self, x: &Tensor<T>) -> Tensor<T> {
        let mut g = Graph::new();
        let xv = g.input(x.clone());
        let [wq, wk, wv] = [&self.wq, &self.wk, &self.wv].map(|w| g.input(w.clone()));
        let q = g.matmul(xv, wq);
        let k = g.matmul(xv, wk);
        let v = g.matmul(xv, wv);
        let out = g.attention(q, k, v, self.heads, true).output;
        g.value(out).into_owned()
    }

    /// One decoding step: the new token's row `x_t` (`d` values) appends its
    /// key and value to `cache`, and its query attends over every cached
    /// token. Returns the token's output row.
    pub fn step(&self, cache: &mut KvCache<T>, x_t: &[T]) -> Vec<T> {
        let d = self.width();
        let row = Tensor::new(x_t.to_vec(), &[1, d]);
        let q = matmul(&row, false, &self.wq, false);
        cache.append(
            &matmul(&row, false, &self.wk, false).data,
            &matmul(&row, false, &self.wv, false).data,
        );
        cache.attend(&q.data, cache.tokens(), self.heads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::kv_cache_bytes;

    fn seeded(n: usize, seed: f64) -> Vec<f64> {
        (0..n)
            .map(|i| ((i as f64 + 1.0) * seed).sin() * 0.8)
            .collect()
    }

    #[test]
    fn decoding_token_by_token_equals_the_full_causal_pass_and_counts_its_bytes() {
        let (tokens, d, heads) = (7, 8, 2);
        let layer = AttentionLayer {
            wq: Tensor::new(seeded(d * d, 0.31), &[d, d]),
            wk: Tensor::new(seeded(d * d, 0.47), &[d, d]),
            wv: Tensor::new(seeded(d * d, 0.59), &[d, d]),
            heads,
        };
        let x = Tensor::new(seeded(tokens * d, 0.23), &[tokens, d]);
        let full = layer.full(&x);
        let mut cache = KvCache::new(d);
        for t in 0..tokens {
            let row = layer.step(&mut cache, x.row(t));
            let worst = crate::autograd::max_abs_diff(&row, full.row(t));
            assert!(worst < 1e-12, "token {t}: {worst}");
            // K and V, heads × head_dim each, 8 bytes a value, t + 1 tokens.
            let want = kv_cache_bytes(1, heads as u64, (d / heads) as u64, t as u64 + 1, 8);
            assert_eq!(Ok(cache.bytes()), want);
        }
        assert_eq!(cache.tokens(), tokens);
    }
}
