//! The GEMM ladder, C = A·B in f32 (A is M × K, B is K × N, both row-major
//! in one input buffer, B after A padded to whole vec4s): the variants, the
//! dispatches and global traffic of each, their loop counts against the
//! driver's budget, the seeded inputs and the f64 reference with its error
//! bound; and the FMA-chain kernel that measures the compute roof.

use rand::{RngExt as _, SeedableRng as _};
use serde::{Deserialize, Serialize};

use super::{
    Buf, Comparison, DeviceLimits, FMA_ITERATIONS, LOOP_BUDGET, PlanError, Problem, Step, Traffic,
    WG,
};

/// The rungs, slowest first; the tiled and register-blocked ones carry their
/// tile and block sizes (the lesson's controls).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GemmKind {
    /// One output per invocation, invocations walking down a column of C:
    /// neighbouring invocations read rows of A `K` floats apart.
    Naive,
    /// One output per invocation, neighbours along a row of C: B's reads and
    /// C's writes are contiguous across a subgroup.
    Coalesced,
    /// Square tiles of A and B staged in workgroup memory, one invocation per
    /// value of C's tile: each value read from global memory is used `edge`
    /// times.
    Tiled(Tile),
    /// 16 × 16 invocations, each computing a block of C in registers (2-D
    /// register blocking): tiles of 16·block on a side.
    Register(Block),
    /// The register-blocked kernel with 16-byte (vec4) global loads, where N
    /// and K are multiples of 4 (else its scalar loads).
    Vec4(Block),
    /// One output per invocation; each subgroup loads a run of A's row once
    /// and shares it lane to lane with `subgroupShuffle` (a warp shuffle).
    Subgroup,
}

/// The tiled kernel's tile edge, which is also its workgroup's edge (8 × 8 =
/// 64 or 16 × 16 = 256 invocations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Tile {
    T8,
    T16,
}

impl Tile {
    pub const ALL: [Self; 2] = [Self::T8, Self::T16];

    pub fn edge(self) -> u32 {
        match self {
            Self::T8 => 8,
            Self::T16 => 16,
        }
    }

    /// Floats of workgroup memory: one tile of A and one of B.
    pub fn workgroup_floats(self) -> u32 {
        2 * self.edge() * self.edge()
    }

    pub fn id(self) -> &'static str {
        match self {
            Self::T8 => "8",
            Self::T16 => "16",
        }
    }
}

/// The block of C each invocation of the register-blocked kernels keeps in
/// registers. The workgroup is always 16 × 16 invocations, so the tile of C
/// is 16·block on a side; the k-tile is 16 deep (8 for the 8 × 8 block, so
/// its two tiles stay 8 KiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Block {
    B2,
    B4,
    B8,
}

impl Block {
    pub const ALL: [Self; 3] = [Self::B2, Self::B4, Self::B8];

    /// The block's edge: 2, 4 or 8 values of C.
    pub fn edge(self) -> u32 {
        match self {
            Self::B2 => 2,
            Self::B4 => 4,
            Self::B8 => 8,
        }
    }

    /// The tile of C a workgroup computes: 16 invocations × the block.
    pub fn tile(self) -> u32 {
        16 * self.edge()
    }

    /// How deep in K each staged tile is.
    pub fn depth(self) -> u32 {
        match self {
            Self::B2 | Self::B4 => 16,
            Self::B8 => 8,
        }
    }

    /// Floats of workgroup memory: a tile × depth of A and depth × tile of B.
    pub fn workgroup_floats(self) -> u32 {
        2 * self.tile() * self.depth()
    }

    pub fn id(self) -> &'static str {
        match self {
            Self::B2 => "2x2",
            Self::B4 => "4x4",
            Self::B8 => "8x8",
        }
    }
}

/// The tile edge of the default tiled rung.
pub const TILE: Tile = Tile::T16;
/// The default register block.
pub const BLOCK: Block = Block::B8;

impl GemmKind {
    /// The ladder at its default sizes.
    pub const ALL: [Self; 6] = Self::ladder(TILE, BLOCK);

    /// Every rung at every size, in ladder order.
    pub const EVERY: [Self; 11] = [
        Self::Naive,
        Self::Coalesced,
        Self::Tiled(Tile::T8),
        Self::Tiled(Tile::T16),
        Self::Register(Block::B2),
        Self::Register(Block::B4),
        Self::Register(Block::B8),
        Self::Vec4(Block::B2),
        Self::Vec4(Block::B4),
        Self::Vec4(Block::B8),
        Self::Subgroup,
    ];

    /// The six rungs with the tiled rung at `tile` and the register-blocked
    /// ones at `block`.
    pub const fn ladder(tile: Tile, block: Block) -> [Self; 6] {
        [
            Self::Naive,
            Self::Coalesced,
            Self::Tiled(tile),
            Self::Register(block),
            Self::Vec4(block),
            Self::Subgroup,
        ]
    }

    /// The rung without its sizes: `naive`, `tiled`, `register`, ….
    pub fn rung(self) -> &'static str {
        match self {
            Self::Naive => "naive",
            Self::Coalesced => "coalesced",
            Self::Tiled(_) => "tiled",
            Self::Register(_) => "register",
            Self::Vec4(_) => "vec4",
            Self::Subgroup => "subgroup",
        }
    }

    /// The rung with its sizes: `tiled-16`, `register-8x8`, `vec4-4x4`.
    pub fn id(self) -> &'static str {
        match self {
            Self::Naive => "naive",
            Self::Coalesced => "coalesced",
            Self::Tiled(Tile::T8) => "tiled-8",
            Self::Tiled(Tile::T16) => "tiled-16",
            Self::Register(Block::B2) => "register-2x2",
            Self::Register(Block::B4) => "register-4x4",
            Self::Register(Block::B8) => "register-8x8",
            Self::Vec4(Block::B2) => "vec4-2x2",
            Self::Vec4(Block::B4) => "vec4-4x4",
            Self::Vec4(Block::B8) => "vec4-8x8",
            Self::Subgroup => "subgroup",
        }
    }

    /// Whether the rung is at one of `tiles` and `blocks` (rungs without
    /// sizes always are; an empty list means every size).
    pub fn sized_in(self, tiles: &[Tile], blocks: &[Block]) -> bool {
        match self {
            Self::Tiled(tile) => tiles.is_empty() || tiles.contains(&tile),
            Self::Register(block) | Self::Vec4(block) => {
                blocks.is_empty() || blocks.contains(&block)
            }
            _ => true,
        }
    }

    /// Floats of workgroup memory the rung declares.
    pub fn workgroup_floats(self) -> u32 {
        match self {
            Self::Tiled(tile) => tile.workgroup_floats(),
            Self::Register(block) | Self::Vec4(block) => block.workgroup_floats(),
            _ => 0,
        }
    }
}

/// Where B starts in the input buffer: after A (M·K values), rounded up to
/// a whole vec4 so B's rows can be read 16 bytes at a time.
pub fn gemm_b_offset(problem: Problem) -> u64 {
    (u64::from(problem.rows) * u64::from(problem.k)).div_ceil(4) * 4
}

/// The subgroup size the subgroup GEMM's traffic is counted for: known only
/// when the adapter has one size.
fn fixed_subgroup(device: DeviceLimits) -> Result<u32, PlanError> {
    if device.subgroup_min == device.subgroup_max && device.subgroup_min > 0 {
        Ok(device.subgroup_min.min(WG))
    } else {
        Err(PlanError::SubgroupSizeVaries {
            min: device.subgroup_min,
            max: device.subgroup_max,
        })
    }
}

/// Loop iterations one invocation of `kind` runs for inner dimension `k`:
/// every iteration and every loop exit costs one, as the driver counts.
pub(super) fn loop_iterations(kind: GemmKind, k: u32, device: DeviceLimits) -> u64 {
    let k = u64::from(k);
    // Per k-tile: the outer iteration and an inner loop of the tile's depth
    // (+ its exit); staging and the block's arithmetic are unrolled.
    let tiles = |depth: u32| {
        let depth = u64::from(depth);
        k.div_ceil(depth) * (depth + 2) + 2
    };
    match kind {
        GemmKind::Naive | GemmKind::Coalesced => k + 2,
        GemmKind::Tiled(tile) => tiles(tile.edge()),
        GemmKind::Register(block) | GemmKind::Vec4(block) => tiles(block.depth()),
        GemmKind::Subgroup => {
            let sg = u64::from(fixed_subgroup(device).unwrap_or(device.subgroup_min.max(1)));
            k.div_ceil(sg) * (sg + 2) + 2
        }
    }
}

/// The largest inner dimension K that `kind` accepts within the loop budget.
pub fn largest_gemm_k(kind: GemmKind, device: DeviceLimits) -> u32 {
    let (mut lo, mut hi) = (0u32, LOOP_BUDGET);
    while lo < hi {
        let mid = hi - (hi - lo) / 2;
        if loop_iterations(kind, mid, device) <= u64::from(LOOP_BUDGET) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The dispatch and traffic of a GEMM rung (M, N, K checked non-zero by the caller).
pub(super) fn plan(
    kind: GemmKind,
    problem: Problem,
    device: DeviceLimits,
) -> Result<(Vec<Step>, Traffic), PlanError> {
    let Problem {
        rows: m,
        cols: n,
        k,
    } = problem;
    if k == 0 {
        return Err(PlanError::Empty);
    }
    let iterations = loop_iterations(kind, k, device);
    if iterations > u64::from(LOOP_BUDGET) {
        return Err(PlanError::GemmTooDeep {
            kernel: format!("gemm/{}", kind.id()),
            k,
            iterations,
            budget: LOOP_BUDGET,
            largest: largest_gemm_k(kind, device),
        });
    }
    let (m64, n64, k64) = (u64::from(m), u64::from(n), u64::from(k));
    let b_offset = u32::try_from(gemm_b_offset(problem)).map_err(|_| PlanError::TooLarge {
        elements: gemm_b_offset(problem),
    })?;
    let tiles = |edge: u32| (u64::from(m.div_ceil(edge)), u64::from(n.div_ceil(edge)));
    let workgroups = |count: u64| {
        u32::try_from(count).map_err(|_| PlanError::TooLarge {
            elements: m64 * n64,
        })
    };
    // Workgroups, and the values each rung loads from global memory (guarded
    // loads of values outside A or B are not made, so not counted): a tiled
    // rung reads A once per column of tiles and B once per row of tiles.
    let tiled_loads = |edge: u32| {
        let (tm, tn) = tiles(edge);
        (tm * tn, tn * m64 * k64 + tm * k64 * n64)
    };
    let (entry, groups, loads) = match kind {
        GemmKind::Naive => (
            "gemm:naive",
            (m64 * n64).div_ceil(u64::from(WG)),
            2 * m64 * n64 * k64,
        ),
        GemmKind::Coalesced => (
            "gemm:coalesced",
            (m64 * n64).div_ceil(u64::from(WG)),
            2 * m64 * n64 * k64,
        ),
        GemmKind::Tiled(tile) => {
            let (groups, loads) = tiled_loads(tile.edge());
            ("gemm:tiled", groups, loads)
        }
        GemmKind::Register(block) | GemmKind::Vec4(block) => {
            let (groups, loads) = tiled_loads(block.tile());
            let aligned = n.is_multiple_of(4) && k.is_multiple_of(4);
            let entry = if matches!(kind, GemmKind::Vec4(_)) && aligned {
                "gemm:blocked_vec4"
            } else {
                "gemm:blocked"
            };
            (entry, groups, loads)
        }
        GemmKind::Subgroup => {
            let sg = u64::from(fixed_subgroup(device)?);
            let row_groups = n64.div_ceil(u64::from(WG));
            let a = m64 * row_groups * (u64::from(WG) / sg) * k64;
            ("gemm_subgroup:main", m64 * row_groups, a + m64 * n64 * k64)
        }
    };
    let step = Step {
        entry,
        workgroups: workgroups(groups)?,
        n: k,
        input: Buf::Input,
        output: Buf::Output,
        bytes_read: 4 * loads,
        bytes_written: 4 * m64 * n64,
        aux: b_offset,
    };
    let traffic = Traffic {
        bytes_read: step.bytes_read,
        bytes_written: step.bytes_written,
        input_passes: 1,
        dispatches: 1,
    };
    Ok((vec![step], traffic))
}

/// The FMA roof: one invocation per value, [`FMA_ITERATIONS`] rounds of
/// eight independent fused multiply-adds each, one value written.
pub(super) fn plan_fma(problem: Problem) -> Result<(Vec<Step>, Traffic), PlanError> {
    let n = u32::try_from(problem.elements()).map_err(|_| PlanError::TooLarge {
        elements: problem.elements(),
    })?;
    let step = Step {
        entry: "fma:main",
        workgroups: n.div_ceil(WG),
        n,
        input: Buf::Input,
        output: Buf::Output,
        bytes_read: 0,
        bytes_written: 4 * u64::from(n),
        aux: FMA_ITERATIONS,
    };
    let traffic = Traffic {
        bytes_read: 0,
        bytes_written: step.bytes_written,
        input_passes: 0,
        dispatches: 1,
    };
    Ok((vec![step], traffic))
}

/// Seeded A (M × K) and B (K × N) uniform in ±1, laid out as the kernels
/// read them: A, zeros up to [`gemm_b_offset`], then B. With `specials`,
/// a few ±inf and NaN (IEEE says where they go: a NaN, or inf·0, poisons
/// its row of A's products; ±inf alone gives ±inf).
pub fn gemm_inputs(problem: Problem, seed: u64, specials: bool) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let a = u64::from(problem.rows) * u64::from(problem.k);
    let offset = gemm_b_offset(problem);
    let b = u64::from(problem.k) * u64::from(problem.cols);
    let mut x: Vec<f32> = (0..offset + b)
        .map(|i| {
            if i >= a && i < offset {
                0.0
            } else {
                rng.random_range(-1.0f32..1.0)
            }
        })
        .collect();
    if specials {
        for (i, v) in x.iter_mut().enumerate() {
            match i % 211 {
                7 => *v = f32::INFINITY,
                100 => *v = f32::NEG_INFINITY,
                150 => *v = f32::NAN,
                _ => {}
            }
        }
    }
    x
}

/// C = A·B in f64 and, per element, Σₖ|aᵢₖ|·|bₖⱼ|, the scale its f32 error
/// is held to: |C − Ĉ| ≤ 1e-4 · Σₖ|aᵢₖ|·|bₖⱼ|.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmReference {
    pub want: Vec<f64>,
    pub scale: Vec<f64>,
}

/// The reference of a GEMM on `input` laid out as [`gemm_inputs`] does.
pub fn gemm_reference(input: &[f32], problem: Problem) -> GemmReference {
    let (m, n, k) = (
        problem.rows as usize,
        problem.cols as usize,
        problem.k as usize,
    );
    let offset = gemm_b_offset(problem) as usize;
    let a = &input[..m * k];
    let b = &input[offset..offset + k * n];
    let mut want = vec![0.0f64; m * n];
    let mut scale = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = f64::from(a[i * k + p]);
            let row = &b[p * n..(p + 1) * n];
            let (w, s) = (
                &mut want[i * n..(i + 1) * n],
                &mut scale[i * n..(i + 1) * n],
            );
            for j in 0..n {
                let y = f64::from(row[j]);
                w[j] += x * y;
                s[j] += (x * y).abs();
            }
        }
    }
    GemmReference { want, scale }
}

/// The bound a GEMM's result is held to: 1e-4 of Σₖ|aᵢₖ|·|bₖⱼ|.
pub const GEMM_TOLERANCE: f64 = 1e-4;

impl GemmReference {
    /// `got` against the reference: `max_rel_error` is the largest
    /// |C − Ĉ| / Σₖ|aᵢₖ|·|bₖⱼ| (so `ok(GEMM_TOLERANCE)` is the bound); a
    /// NaN or infinity where the reference has none, or the other way
    /// round, is a mismatch.
    pub fn compare(&self, got: &[f32]) -> Comparison {
        let mut c = Comparison::default();
        for ((g, w), s) in got.iter().zip(&self.want).zip(&self.scale) {
            c.compared += 1;
            let g = f64::from(*g);
            if !g.is_finite() || !w.is_finite() {
                if !((g.is_nan() && w.is_nan()) || g == *w) {
                    c.special_mismatches += 1;
                    c.max_abs_error = f64::INFINITY;
                    c.max_rel_error = f64::INFINITY;
                }
                continue;
            }
            let err = (g - w).abs();
            c.max_abs_error = c.max_abs_error.max(err);
            let rel = if err == 0.0 {
                0.0
            } else if *s > 0.0 {
                err / s
            } else {
                f64::INFINITY
            };
            c.max_rel_error = c.max_rel_error.max(rel);
        }
        if got.len() != self.want.len() {
            c.special_mismatches += got.len().abs_diff(self.want.len()) as u64;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{Kernel, plan as plan_kernel};

    const DEV: DeviceLimits = crate::kernels::TEST_DEVICE;

    #[test]
    fn traffic_falls_as_tiles_grow_and_flops_stay() {
        let p = Problem::gemm(256, 256, 256);
        let bytes = |kind| {
            plan_kernel(Kernel::Gemm(kind), p, DEV)
                .map(|(_, t)| t.bytes())
                .unwrap_or(0)
        };
        // 2·M·N·K loads + M·N stores, 4 bytes each.
        assert_eq!(
            bytes(GemmKind::Naive),
            4 * (2 * 256 * 256 * 256 + 256 * 256)
        );
        // 16-wide tiles: each value of A and B read N/16 and M/16 times.
        let tiled = GemmKind::Tiled(Tile::T16);
        assert_eq!(bytes(tiled), 4 * (2 * 16 * 256 * 256 + 256 * 256));
        // 8-wide tiles read each value twice as often.
        assert_eq!(
            bytes(GemmKind::Tiled(Tile::T8)),
            4 * (2 * 32 * 256 * 256 + 256 * 256)
        );
        // Register blocks of b: tiles of 16·b, so 256 / (16·b) reads each.
        for (block, reads) in [(Block::B2, 8), (Block::B4, 4), (Block::B8, 2)] {
            let want = 4 * (2 * reads * 256 * 256 + 256 * 256);
            assert_eq!(bytes(GemmKind::Register(block)), want, "{block:?}");
            assert_eq!(bytes(GemmKind::Vec4(block)), want, "{block:?}");
        }
        assert_eq!(Kernel::Gemm(GemmKind::Naive).ops(p), 2.0 * 256f64.powi(3));
    }

    #[test]
    fn edge_tiles_count_only_the_values_inside() {
        // 17 × 33 by 65: the tiled kernel's 2 × 3 tiles read A three times
        // and B twice, no more.
        let p = Problem::gemm(17, 33, 65);
        let (steps, t) =
            plan_kernel(Kernel::Gemm(GemmKind::Tiled(Tile::T16)), p, DEV).unwrap_or_default();
        assert_eq!(steps[0].workgroups, 6);
        assert_eq!(t.bytes_read, 4 * (3 * 17 * 65 + 2 * 65 * 33));
        // Misaligned shapes take the scalar entry of the vec4 rung.
        let vec4 = Kernel::Gemm(GemmKind::Vec4(Block::B4));
        let (steps, _) = plan_kernel(vec4, p, DEV).unwrap_or_default();
        assert_eq!(steps[0].entry, "gemm:blocked");
        let aligned = Problem::gemm(17, 32, 64);
        let (steps, _) = plan_kernel(vec4, aligned, DEV).unwrap_or_default();
        assert_eq!(steps[0].entry, "gemm:blocked_vec4");
        assert_eq!(gemm_b_offset(p) % 4, 0);
    }

    #[test]
    fn every_rung_refuses_a_k_past_the_loop_budget_and_names_its_largest() {
        for kind in GemmKind::EVERY {
            let largest = largest_gemm_k(kind, DEV);
            assert!(largest > 40_000, "{kind:?}: {largest}");
            assert!(plan_kernel(Kernel::Gemm(kind), Problem::gemm(2, 3, largest), DEV).is_ok());
            let err = plan_kernel(Kernel::Gemm(kind), Problem::gemm(2, 3, largest + 1), DEV);
            assert!(
                err.as_ref()
                    .is_err_and(|e| e.to_string().contains(&largest.to_string())),
                "{kind:?}: {err:?}"
            );
        }
        // A subgroup size that varies leaves the subgroup rung's traffic unknown.
        let varies = DeviceLimits {
            subgroup_min: 8,
            ..DEV
        };
        assert!(
            plan_kernel(
                Kernel::Gemm(GemmKind::Subgroup),
                Problem::gemm(4, 4, 4),
                varies
            )
            .is_err()
        );
    }

    #[test]
    fn every_size_fits_the_workgroup_memory_every_adapter_has() {
        // WebGPU guarantees 16 KiB of workgroup memory, so the sizes need no
        // adapter check: the largest, the 8 × 8 block, takes 8 KiB.
        for kind in GemmKind::EVERY {
            assert!(kind.workgroup_floats() * 4 <= 16_384, "{kind:?}");
        }
        assert_eq!(GemmKind::Register(Block::B8).workgroup_floats(), 2048);
        // Every id is distinct, and names its sizes.
        let ids: std::collections::HashSet<_> = GemmKind::EVERY.map(GemmKind::id).into();
        assert_eq!(ids.len(), GemmKind::EVERY.len());
    }

    #[test]
    fn the_reference_bound_and_ieee_specials() {
        let p = Problem::gemm(2, 2, 2);
        // A = [[1, 2], [inf, 0]], B = [[3, 4], [5, NaN]].
        let mut x = vec![1.0, 2.0, f32::INFINITY, 0.0];
        x.extend([3.0, 4.0, 5.0, f32::NAN]);
        let r = gemm_reference(&x, p);
        assert_eq!(r.want[0], 13.0);
        assert!(r.want[1].is_nan());
        assert!(r.want[2].is_infinite() && r.want[2] > 0.0);
        // inf·4 + 0·NaN: NaN.
        assert!(r.want[3].is_nan());
        assert_eq!(r.scale[0], 13.0);
        let ok = r.compare(&[13.0 + 1e-3, f32::NAN, f32::INFINITY, f32::NAN]);
        assert!(ok.ok(GEMM_TOLERANCE), "{ok:?}");
        let off = r.compare(&[13.01, f32::NAN, f32::INFINITY, f32::NAN]);
        assert!(!off.ok(GEMM_TOLERANCE));
        let lost_nan = r.compare(&[13.0, 0.0, f32::INFINITY, f32::NAN]);
        assert_eq!(lost_nan.special_mismatches, 1);
    }
}
