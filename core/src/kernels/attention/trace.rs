//! The tiled rung's loop replayed in f64 on one head, tile by tile, for the
//! page's picture: which block of rows and which tile of K and V is in
//! workgroup memory, each row's running max and sum after it, and the
//! factor exp(m_old − m_new) that rescales O.

use super::{AttnError, AttnShape, Qkv, Tiles};

/// One row of the block after a tile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowState {
    pub row: u32,
    /// The running max (−inf before the row's first real key).
    pub m: f64,
    /// The running sum of exp(s − m).
    pub l: f64,
    /// exp(m_old − m_new): what O and l were multiplied by at this tile
    /// (1 where the max did not move, 0 at the row's first key).
    pub rescale: f64,
}

/// One tile of K and V visited by one block of query rows.
#[derive(Clone, Debug, PartialEq)]
pub struct TileStep {
    pub block: u32,
    /// Query rows [first, last) of the block.
    pub rows: (u32, u32),
    /// Key rows [first, last) of the tile.
    pub keys: (u32, u32),
    /// Skipped by the causal rung: the whole tile is above the diagonal.
    pub skipped: bool,
    pub state: Vec<RowState>,
}

/// The tiled rung's loop on head 0 of `shape`; with `skip`, tiles above the
/// diagonal are marked skipped and leave the state as it was.
pub fn trace(
    shape: &AttnShape,
    tiles: Tiles,
    qkv: &Qkv,
    skip: bool,
) -> Result<Vec<TileStep>, AttnError> {
    qkv.check(shape)?;
    let (n, d) = (shape.seq, shape.head_dim as usize);
    let scale = 1.0 / (d as f64).sqrt();
    let row = |m: &[f32], r: u32| -> Vec<f64> {
        let start = r as usize * d;
        m[start..start + d].iter().map(|x| f64::from(*x)).collect()
    };
    let len = shape.key_len(0);
    let mut steps = Vec::new();
    for block in 0..n.div_ceil(tiles.br) {
        let (r0, r1) = (block * tiles.br, ((block + 1) * tiles.br).min(n));
        let mut state: Vec<RowState> = (r0..r1)
            .map(|row| RowState {
                row,
                m: f64::NEG_INFINITY,
                l: 0.0,
                rescale: 1.0,
            })
            .collect();
        for t in 0..len.div_ceil(tiles.bc) {
            let (j0, j1) = (t * tiles.bc, ((t + 1) * tiles.bc).min(len));
            let skipped = skip && shape.causal && j0 >= r1;
            if skipped {
                for s in &mut state {
                    s.rescale = 1.0;
                }
            } else {
                for s in &mut state {
                    let e = shape.keys(0, s.row);
                    let q = row(&qkv.q, s.row);
                    let scores: Vec<f64> = (j0..j1.min(e))
                        .map(|j| {
                            q.iter()
                                .zip(row(&qkv.k, j))
                                .map(|(a, b)| a * b)
                                .sum::<f64>()
                                * scale
                        })
                        .collect();
                    let tile_max = scores.iter().fold(f64::NEG_INFINITY, |a, b| a.max(*b));
                    let new_max = s.m.max(tile_max);
                    s.rescale = super::rescale_factor(s.m, tile_max);
                    s.l = s.l * s.rescale + scores.iter().map(|x| (x - new_max).exp()).sum::<f64>();
                    s.m = new_max;
                }
            }
            steps.push(TileStep {
                block,
                rows: (r0, r1),
                keys: (j0, j1),
                skipped,
                state: state.clone(),
            });
        }
    }
    Ok(steps)
}
