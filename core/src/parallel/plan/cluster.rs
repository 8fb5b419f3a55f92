//! The machines the 3D planner plans for: datasheet numbers, with their
//! sources. Latencies are not on datasheets; the α here are round
//! assumptions of the right order (a few µs within a node, ~10 µs across).

use serde::Serialize;

/// One cluster's GPUs and links. Bandwidths are per GPU and per direction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cluster {
    pub key: &'static str,
    pub gpus_per_node: u64,
    /// Memory per GPU, bytes.
    pub memory: u64,
    /// Dense BF16 tensor-core peak per GPU, FLOP/s.
    pub peak_flops: f64,
    /// Within a node (NVLink, or PCIe), bytes/s each way, and latency.
    pub intra_bytes_per_s: f64,
    pub intra_alpha_s: f64,
    /// Across nodes (the GPU's own NIC), bytes/s each way, and latency.
    pub inter_bytes_per_s: f64,
    pub inter_alpha_s: f64,
}

const GIB: u64 = 1 << 30;

impl Cluster {
    /// - `dgx-h100`: NVIDIA DGX H100 datasheet — 8 × H100 SXM5 80 GB;
    ///   989 TFLOP/s dense BF16 (H100 datasheet, 1,979 with sparsity);
    ///   NVLink 4 at 900 GB/s per GPU bidirectional, 450 GB/s each way;
    ///   one ConnectX-7 400 Gb/s InfiniBand port per GPU, 50 GB/s.
    /// - `dgx-a100`: NVIDIA DGX A100 datasheet — 8 × A100 SXM4 80 GB; 312
    ///   TFLOP/s dense BF16; NVLink 3 at 600 GB/s bidirectional, 300 each
    ///   way; one 200 Gb/s HDR InfiniBand port per GPU, 25 GB/s.
    /// - `rtx4090x8`: eight GeForce RTX 4090 (Ada whitepaper: 165.2 TFLOP/s
    ///   dense FP16/BF16 with FP32 accumulation, 24 GB) on PCIe 4.0 x16
    ///   (about 32 GB/s each way, no NVLink), nodes on 100 Gb/s Ethernet
    ///   (12.5 GB/s per node, shared by its 8 GPUs: 1.56 GB/s each).
    pub const ALL: [Self; 3] = [
        Self {
            key: "dgx-h100",
            gpus_per_node: 8,
            memory: 80 * GIB,
            peak_flops: 989e12,
            intra_bytes_per_s: 450e9,
            intra_alpha_s: 3e-6,
            inter_bytes_per_s: 50e9,
            inter_alpha_s: 10e-6,
        },
        Self {
            key: "dgx-a100",
            gpus_per_node: 8,
            memory: 80 * GIB,
            peak_flops: 312e12,
            intra_bytes_per_s: 300e9,
            intra_alpha_s: 3e-6,
            inter_bytes_per_s: 25e9,
            inter_alpha_s: 10e-6,
        },
        Self {
            key: "rtx4090x8",
            gpus_per_node: 8,
            memory: 24 * GIB,
            peak_flops: 165.2e12,
            intra_bytes_per_s: 32e9,
            intra_alpha_s: 5e-6,
            inter_bytes_per_s: 12.5e9 / 8.0,
            inter_alpha_s: 20e-6,
        },
    ];

    pub fn by_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.key == key.trim())
    }
}
