//! CUDA's words for WGSL's: the table interviews expect a learner to
//! translate in both directions.

use dlsys_core::text::Lang;

use super::TEXT;

/// (CUDA, WGSL, catalog key of what it is).
pub const WORDS: [(&str, &str, &str); 14] = [
    ("grid (gridDim)", "dispatch (dispatchWorkgroups, num_workgroups)", "vocab.grid"),
    ("block (blockDim)", "workgroup (@workgroup_size)", "vocab.block"),
    ("thread", "invocation", "vocab.thread"),
    ("warp (32 threads)", "subgroup (subgroup_size)", "vocab.warp"),
    ("threadIdx", "local_invocation_id", "vocab.thread_idx"),
    ("blockIdx", "workgroup_id", "vocab.block_idx"),
    ("blockIdx · blockDim + threadIdx", "global_invocation_id", "vocab.global_idx"),
    ("__shared__", "var<workgroup>", "vocab.shared"),
    ("__syncthreads()", "workgroupBarrier()", "vocab.sync"),
    ("__shfl_sync, __reduce_add_sync", "subgroupShuffle, subgroupAdd", "vocab.shuffle"),
    ("__syncwarp()", "—", "vocab.syncwarp"),
    ("global memory (cudaMalloc)", "var<storage>", "vocab.global"),
    ("__constant__", "var<uniform>", "vocab.constant"),
    ("float4 loads", "vec4<f32> loads", "vocab.float4"),
];

pub fn table(ui: &mut egui::Ui, lang: Lang) {
    crate::kit::theme::sideways(ui, "gemm_vocab", |ui| {
        egui::Grid::new("gemm_vocab").striped(true).spacing([14.0, 4.0]).show(ui, |ui| {
            for key in ["vocab.cuda", "vocab.wgsl", "vocab.what"] {
                ui.strong(TEXT.get(lang, key));
            }
            ui.end_row();
            for (cuda, wgsl, what) in WORDS {
                ui.monospace(cuda);
                ui.monospace(wgsl);
                // Wrapped at a fixed width, so the table fits the page.
                ui.scope(|ui| {
                    ui.set_max_width(340.0);
                    ui.add(egui::Label::new(TEXT.get(lang, what)).wrap());
                });
                ui.end_row();
            }
        });
    });
}
