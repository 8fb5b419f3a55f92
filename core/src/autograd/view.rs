//! Strided views: a shape, a stride per dimension and an offset over data
//! that is shared, not copied. A transpose or a permutation (NCHW → NHWC is
//! `[0, 2, 3, 1]`) only rearranges the strides; "contiguous" means the
//! strides are the row-major ones, so the logical order is the memory order;
//! [`Strided::contiguous`] is the one operation that copies.

use std::sync::Arc;

crate::catalog_error! {
    /// A view asked for with a shape or order that does not fit.
    pub enum ViewError {
        /// The order is not a permutation of the dimensions.
        NotAPermutation { order: String, rank: usize } = "view.not_a_permutation",
        /// An index outside the shape, or of the wrong rank.
        OutOfRange { index: String, shape: String } = "view.out_of_range",
        /// Data that does not hold every element the view reaches.
        TooShort { needed: usize, len: usize } = "view.too_short",
    }
}

/// The permutation that takes NCHW to NHWC: dimension i of the result is
/// dimension `order[i]` of the source.
pub const NCHW_TO_NHWC: [usize; 4] = [0, 2, 3, 1];
/// And back.
pub const NHWC_TO_NCHW: [usize; 4] = [0, 3, 1, 2];

/// How a view walks memory: element (i₀, i₁, …) is at
/// `offset + Σ iₖ·strides[k]`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    pub shape: Vec<usize>,
    pub strides: Vec<usize>,
    pub offset: usize,
}

impl Layout {
    /// Row-major: the last dimension's stride is 1, each earlier one the
    /// product of the sizes after it.
    pub fn contiguous(shape: &[usize]) -> Self {
        let mut strides = vec![1; shape.len()];
        for k in (0..shape.len().saturating_sub(1)).rev() {
            strides[k] = strides[k + 1] * shape[k + 1];
        }
        Self {
            shape: shape.to_vec(),
            strides,
            offset: 0,
        }
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the logical (row-major) order is the memory order.
    pub fn is_contiguous(&self) -> bool {
        let row_major = Self::contiguous(&self.shape);
        // Dimensions of size 1 may have any stride.
        self.shape
            .iter()
            .zip(self.strides.iter().zip(&row_major.strides))
            .all(|(size, (s, r))| *size == 1 || s == r)
    }

    /// Where element `index` lives.
    pub fn offset_of(&self, index: &[usize]) -> Result<usize, ViewError> {
        if index.len() != self.shape.len() || index.iter().zip(&self.shape).any(|(i, n)| i >= n) {
            return Err(ViewError::OutOfRange {
                index: format!("{index:?}"),
                shape: format!("{:?}", self.shape),
            });
        }
        Ok(self.offset
            + index
                .iter()
                .zip(&self.strides)
                .map(|(i, s)| i * s)
                .sum::<usize>())
    }

    /// The dimensions reordered: dimension i of the result is `order[i]` of
    /// this one. No data moves.
    pub fn permute(&self, order: &[usize]) -> Result<Self, ViewError> {
        let mut seen = vec![false; self.shape.len()];
        let valid = order.len() == self.shape.len()
            && order
                .iter()
                .all(|k| *k < seen.len() && !std::mem::replace(&mut seen[*k], true));
        if !valid {
            return Err(ViewError::NotAPermutation {
                order: format!("{order:?}"),
                rank: self.shape.len(),
            });
        }
        Ok(Self {
            shape: order.iter().map(|k| self.shape[*k]).collect(),
            strides: order.iter().map(|k| self.strides[*k]).collect(),
            offset: self.offset,
        })
    }

    /// Dimensions `a` and `b` swapped.
    pub fn transpose(&self, a: usize, b: usize) -> Result<Self, ViewError> {
        let mut order: Vec<usize> = (0..self.shape.len()).collect();
        if a >= order.len() || b >= order.len() {
            return Err(ViewError::NotAPermutation {
                order: format!("[{a}, {b}]"),
                rank: self.shape.len(),
            });
        }
        order.swap(a, b);
        self.permute(&order)
    }

    /// Every index in logical (row-major) order, with its memory offset.
    pub fn offsets(&self) -> impl Iterator<Item = (Vec<usize>, usize)> + '_ {
        let n = self.numel();
        (0..n).map(move |mut flat| {
            let mut index = vec![0; self.shape.len()];
            for k in (0..self.shape.len()).rev() {
                index[k] = flat % self.shape[k];
                flat /= self.shape[k];
            }
            let at = self.offset
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(i, s)| i * s)
                    .sum::<usize>();
            (index, at)
        })
    }

    /// The last memory offset the view reaches, plus one (0 when empty).
    fn extent(&self) -> usize {
        if self.numel() == 0 {
            return 0;
        }
        self.offset
            + self
                .shape
                .iter()
                .zip(&self.strides)
                .map(|(n, s)| (n - 1) * s)
                .sum::<usize>()
            + 1
    }
}

/// Values seen through a [`Layout`]; views of one tensor share its data.
#[derive(Clone, Debug)]
pub struct Strided<T> {
    data: Arc<Vec<T>>,
    pub layout: Layout,
}

impl<T: Copy> Strided<T> {
    /// `data` as a contiguous tensor of `shape`.
    pub fn new(data: Vec<T>, shape: &[usize]) -> Result<Self, ViewError> {
        let layout = Layout::contiguous(shape);
        if data.len() < layout.extent() {
            return Err(ViewError::TooShort {
                needed: layout.extent(),
                len: data.len(),
            });
        }
        Ok(Self {
            data: Arc::new(data),
            layout,
        })
    }

    /// Whether two views look at the same memory (nothing was copied).
    pub fn shares_data(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }

    pub fn permute(&self, order: &[usize]) -> Result<Self, ViewError> {
        Ok(Self {
            data: Arc::clone(&self.data),
            layout: self.layout.permute(order)?,
        })
    }

    pub fn transpose(&self, a: usize, b: usize) -> Result<Self, ViewError> {
        Ok(Self {
            data: Arc::clone(&self.data),
            layout: self.layout.transpose(a, b)?,
        })
    }

    pub fn get(&self, index: &[usize]) -> Result<T, ViewError> {
        Ok(self.data[self.layout.offset_of(index)?])
    }

    /// The values in logical order, copied into new contiguous memory.
    pub fn contiguous(&self) -> Self {
        let values: Vec<T> = self.layout.offsets().map(|(_, at)| self.data[at]).collect();
        Self {
            data: Arc::new(values),
            layout: Layout::contiguous(&self.layout.shape),
        }
    }

    /// The memory under the view, as stored.
    pub fn memory(&self) -> &[T] {
        &self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nchw_to_nhwc_is_a_permutation_of_strides_and_copies_nothing() {
        // N = 2, C = 3, H = 2, W = 4.
        let x = Strided::new((0..48).collect::<Vec<u32>>(), &[2, 3, 2, 4]).unwrap();
        assert_eq!(x.layout.strides, vec![24, 8, 4, 1]);
        let nhwc = x.permute(&NCHW_TO_NHWC).unwrap();
        assert!(nhwc.shares_data(&x));
        assert_eq!(nhwc.layout.shape, vec![2, 2, 4, 3]);
        assert_eq!(nhwc.layout.strides, vec![24, 4, 1, 8]);
        assert!(!nhwc.layout.is_contiguous());
        // The same element through both views: (n, c, h, w) = (1, 2, 1, 3).
        assert_eq!(
            nhwc.get(&[1, 1, 3, 2]).unwrap(),
            x.get(&[1, 2, 1, 3]).unwrap()
        );
        assert_eq!(x.get(&[1, 2, 1, 3]).unwrap(), 24 + 16 + 4 + 3);
        // Made contiguous, NHWC's strides are C·W·H·…: the copy happens here.
        let packed = nhwc.contiguous();
        assert!(!packed.shares_data(&x));
        assert_eq!(packed.layout.strides, vec![24, 12, 3, 1]);
        assert_eq!(packed.get(&[1, 1, 3, 2]).unwrap(), 47);
        // And back to NCHW: the original order.
        let back = packed.permute(&NHWC_TO_NCHW).unwrap().contiguous();
        assert_eq!(back.memory(), x.memory());
    }

    #[test]
    fn a_transpose_swaps_strides_and_bad_orders_are_refused() {
        let m = Strided::new(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        let t = m.transpose(0, 1).unwrap();
        assert_eq!(
            (t.layout.shape.clone(), t.layout.strides.clone()),
            (vec![3, 2], vec![1, 3])
        );
        assert_eq!(t.contiguous().memory(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert!(m.layout.is_contiguous() && !t.layout.is_contiguous());
        assert!(m.permute(&[0, 0]).is_err());
        assert!(m.permute(&[1]).is_err());
        assert!(m.transpose(0, 2).is_err());
        assert!(m.get(&[2, 0]).is_err());
        assert!(Strided::new(vec![1.0], &[2, 2]).is_err());
        // Size-1 dimensions do not break contiguity.
        let column = Layout {
            shape: vec![3, 1],
            strides: vec![1, 7],
            offset: 0,
        };
        assert!(column.is_contiguous());
    }
}
