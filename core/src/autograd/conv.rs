//! Convolution and pooling over NCHW images, as the engine stores them: a
//! batch is a `[N, C·H·W]` tensor, each row one image with its channels one
//! after another, each channel H rows of W. The shapes' arithmetic (output
//! size, parameters, the im2col matrix) is said here once, for the engine,
//! the lesson and its exercises; `im2col` lays one image's patches out as
//! the columns of a matrix, so a convolution is one GEMM per image, and
//! `col2im` adds a patch matrix's gradient back onto the image.

/// A 2-D convolution: `out_channels` filters of `in_channels × kernel.0 ×
/// kernel.1` over `height × width` images, padded with zeros, sampled every
/// `stride` pixels, the filter's taps `dilation` apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Conv2d {
    pub in_channels: usize,
    pub out_channels: usize,
    pub height: usize,
    pub width: usize,
    pub kernel: (usize, usize),
    pub stride: usize,
    pub padding: usize,
    pub dilation: usize,
}

/// One output side: ⌊(in + 2·padding − dilation·(kernel − 1) − 1) / stride⌋ + 1,
/// or `None` when the dilated kernel does not fit the padded input (or a
/// stride or dilation is 0).
pub fn conv_output_side(
    input: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
) -> Option<usize> {
    if stride == 0 || dilation == 0 || kernel == 0 {
        return None;
    }
    let span = dilation * (kernel - 1) + 1;
    let padded = input + 2 * padding;
    (padded >= span).then(|| (padded - span) / stride + 1)
}

impl Conv2d {
    /// A square `kernel × kernel` convolution, stride 1, no padding, no dilation.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        side: (usize, usize),
        kernel: usize,
    ) -> Self {
        Self {
            in_channels,
            out_channels,
            height: side.0,
            width: side.1,
            kernel: (kernel, kernel),
            stride: 1,
            padding: 0,
            dilation: 1,
        }
    }

    /// The output's height and width, `None` when the kernel does not fit.
    pub fn output(&self) -> Option<(usize, usize)> {
        Some((
            conv_output_side(
                self.height,
                self.kernel.0,
                self.stride,
                self.padding,
                self.dilation,
            )?,
            conv_output_side(
                self.width,
                self.kernel.1,
                self.stride,
                self.padding,
                self.dilation,
            )?,
        ))
    }

    /// Rows of the patch matrix, and of a filter: C·KH·KW.
    pub fn patch(&self) -> usize {
        self.in_channels * self.kernel.0 * self.kernel.1
    }

    /// Parameters: the weights (OC × C·KH·KW) and one bias per output channel.
    pub fn parameters(&self, bias: bool) -> usize {
        self.out_channels * self.patch() + if bias { self.out_channels } else { 0 }
    }

    /// Values in one input image (C·H·W).
    pub fn input_len(&self) -> usize {
        self.in_channels * self.height * self.width
    }

    /// Output pixels per channel, OH·OW (0 when the kernel does not fit).
    pub fn plane(&self) -> usize {
        self.output().map_or(0, |(h, w)| h * w)
    }

    /// Values in one output image (OC·OH·OW); 0 when the kernel does not fit.
    pub fn output_len(&self) -> usize {
        self.output().map_or(0, |(h, w)| self.out_channels * h * w)
    }

    /// Multiply-adds for a batch of `n` images: each output value is a dot
    /// product of C·KH·KW — the GEMM's M·N·K with M = OC, N = OH·OW, K = C·KH·KW.
    pub fn macs(&self, n: usize) -> u64 {
        (n * self.output_len() * self.patch()) as u64
    }

    /// Where patch row `p` (channel, tap row, tap column) at output pixel
    /// (`oy`, `ox`) reads the input, or `None` for the zero padding.
    /// Row `p` of the patch matrix: its (channel, tap row, tap column).
    pub fn tap(&self, p: usize) -> (usize, usize, usize) {
        let (kh, kw) = self.kernel;
        let (c, tap) = (p / (kh * kw), p % (kh * kw));
        (c, tap / kw, tap % kw)
    }

    fn source(&self, p: usize, oy: usize, ox: usize) -> Option<usize> {
        let (c, ky, kx) = self.tap(p);
        let y = (oy * self.stride + ky * self.dilation).checked_sub(self.padding)?;
        let x = (ox * self.stride + kx * self.dilation).checked_sub(self.padding)?;
        (y < self.height && x < self.width).then_some((c * self.height + y) * self.width + x)
    }

    /// One image's patches as a `C·KH·KW × OH·OW` matrix, row-major: column
    /// `oy·OW + ox` holds the values the filter sees at output pixel (oy, ox).
    pub fn im2col<T: Copy + Default>(&self, image: &[T]) -> Vec<T> {
        let (oh, ow) = self.output().unwrap_or((0, 0));
        let mut cols = vec![T::default(); self.patch() * oh * ow];
        for p in 0..self.patch() {
            for oy in 0..oh {
                for ox in 0..ow {
                    if let Some(at) = self.source(p, oy, ox) {
                        cols[(p * oh + oy) * ow + ox] = image[at];
                    }
                }
            }
        }
        cols
    }

    /// The transpose of [`Self::im2col`]: adds each entry of a patch
    /// matrix's gradient to the input pixel it was read from.
    pub fn col2im_add<T: Copy + std::ops::AddAssign>(&self, cols: &[T], image: &mut [T]) {
        let (oh, ow) = self.output().unwrap_or((0, 0));
        for p in 0..self.patch() {
            for oy in 0..oh {
                for ox in 0..ow {
                    if let Some(at) = self.source(p, oy, ox) {
                        image[at] += cols[(p * oh + oy) * ow + ox];
                    }
                }
            }
        }
    }
}

/// Max or average pooling: `channels` planes of `height × width`, windows of
/// `kernel × kernel` every `stride` pixels, no padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pool2d {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub kernel: usize,
    pub stride: usize,
}

impl Pool2d {
    /// The output's height and width, `None` when the window does not fit.
    pub fn output(&self) -> Option<(usize, usize)> {
        Some((
            conv_output_side(self.height, self.kernel, self.stride, 0, 1)?,
            conv_output_side(self.width, self.kernel, self.stride, 0, 1)?,
        ))
    }

    pub fn input_len(&self) -> usize {
        self.channels * self.height * self.width
    }

    pub fn output_len(&self) -> usize {
        self.output().map_or(0, |(h, w)| self.channels * h * w)
    }

    /// The input indices of output value `o`'s window, in row-major order.
    pub fn window(&self, o: usize) -> impl Iterator<Item = usize> + '_ {
        let (oh, ow) = self.output().unwrap_or((0, 0));
        let plane = oh.max(1) * ow.max(1);
        let (c, pix) = (o / plane, o % plane);
        let (oy, ox) = (pix / ow.max(1), pix % ow.max(1));
        let k = self.kernel;
        (0..k * k).map(move |t| {
            let (y, x) = (oy * self.stride + t / k, ox * self.stride + t % k);
            (c * self.height + y) * self.width + x
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_sizes_follow_the_formula_and_refuse_what_does_not_fit() {
        // 28 × 28, 5 × 5, stride 1, no padding: 24; padding 2 keeps 28.
        assert_eq!(conv_output_side(28, 5, 1, 0, 1), Some(24));
        assert_eq!(conv_output_side(28, 5, 1, 2, 1), Some(28));
        // Stride 2 on 7 with 3 × 3: ⌊(7 − 3)/2⌋ + 1 = 3; dilation 2 spans 5.
        assert_eq!(conv_output_side(7, 3, 2, 0, 1), Some(3));
        assert_eq!(conv_output_side(7, 3, 1, 0, 2), Some(3));
        assert_eq!(conv_output_side(2, 3, 1, 0, 1), None);
        assert_eq!(conv_output_side(5, 3, 0, 0, 1), None);
        let c = Conv2d::new(3, 8, (32, 32), 3);
        assert_eq!(c.parameters(true), 8 * 27 + 8);
        assert_eq!(c.output(), Some((30, 30)));
        assert_eq!(c.macs(2), 2 * 8 * 900 * 27);
    }

    #[test]
    fn im2col_gathers_each_patch_and_col2im_is_its_transpose() {
        // One 1 × 3 × 3 image 1..9, a 2 × 2 kernel: four patches.
        let c = Conv2d::new(1, 1, (3, 3), 2);
        let image: Vec<f64> = (1..=9).map(f64::from).collect();
        let cols = c.im2col(&image);
        // Rows are taps (0,0), (0,1), (1,0), (1,1); columns the 4 outputs.
        assert_eq!(
            cols,
            vec![
                1., 2., 4., 5., 2., 3., 5., 6., 4., 5., 7., 8., 5., 6., 8., 9.
            ]
        );
        // Padding 1 reads zeros outside the image.
        let padded = Conv2d { padding: 1, ..c };
        assert_eq!(padded.output(), Some((4, 4)));
        assert_eq!(padded.im2col(&image)[0], 0.0);
        // ⟨im2col(x), y⟩ = ⟨x, col2im(y)⟩ for any y: col2im is the transpose.
        let strided = Conv2d {
            stride: 2,
            padding: 1,
            dilation: 2,
            ..Conv2d::new(2, 1, (5, 4), 3)
        };
        let x: Vec<f64> = (0..strided.input_len())
            .map(|i| (i as f64 * 0.37).sin())
            .collect();
        let cols = strided.im2col(&x);
        let y: Vec<f64> = (0..cols.len()).map(|i| (i as f64 * 0.71).cos()).collect();
        let mut back = vec![0.0; x.len()];
        strided.col2im_add(&y, &mut back);
        let left: f64 = cols.iter().zip(&y).map(|(a, b)| a * b).sum();
        let right: f64 = x.iter().zip(&back).map(|(a, b)| a * b).sum();
        assert!((left - right).abs() < 1e-12, "{left} vs {right}");
    }

    #[test]
    fn pooling_windows_tile_the_plane() {
        let p = Pool2d {
            channels: 2,
            height: 4,
            width: 4,
            kernel: 2,
            stride: 2,
        };
        assert_eq!(p.output(), Some((2, 2)));
        assert_eq!(p.window(0).collect::<Vec<_>>(), vec![0, 1, 4, 5]);
        assert_eq!(p.window(3).collect::<Vec<_>>(), vec![10, 11, 14, 15]);
        assert_eq!(p.window(4).collect::<Vec<_>>(), vec![16, 17, 20, 21]);
    }
}
