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

/// Narrowest the meanings' column gets beside the two code columns; below
/// it, each row's CUDA and WGSL words stand one over the other.
const MIN_MEANING: f32 = 260.0;

pub fn table(ui: &mut egui::Ui, lang: Lang) {
    let spacing = egui::vec2(14.0, 4.0);
    let font = egui::TextStyle::Monospace.resolve(ui.style());
    let color = ui.visuals().text_color();
    let width = |text: &str| {
        ui.fonts_mut(|f| f.layout_no_wrap(text.to_owned(), font.clone(), color))
            .size()
            .x
    };
    let (cuda, wgsl) = WORDS.iter().fold((0.0f32, 0.0f32), |(c, w), row| {
        (c.max(width(row.0)), w.max(width(row.1)))
    });
    let page = ui.available_width();
    let side_by_side = page - cuda - wgsl - 3.0 * spacing.x >= MIN_MEANING;
    let code = if side_by_side { cuda + wgsl + spacing.x } else { cuda.max(wgsl) };
    let what_width = (page - code - 2.0 * spacing.x).max(160.0);
    crate::kit::theme::sideways(ui, "gemm_vocab", |ui| {
        egui::Grid::new("gemm_vocab").striped(true).spacing(spacing).show(ui, |ui| {
            if side_by_side {
                ui.strong(TEXT.get(lang, "vocab.cuda"));
                ui.strong(TEXT.get(lang, "vocab.wgsl"));
            } else {
                ui.vertical(|ui| {
                    ui.strong(TEXT.get(lang, "vocab.cuda"));
                    ui.strong(TEXT.get(lang, "vocab.wgsl"));
                });
            }
            ui.strong(TEXT.get(lang, "vocab.what"));
            ui.end_row();
            for (cuda, wgsl, what) in WORDS {
                if side_by_side {
                    ui.monospace(cuda);
                    ui.monospace(wgsl);
                } else {
                    // Never wrapped: a grid cell's first frame is narrow,
                    // and the grid would keep the wrapped width.
                    ui.vertical(|ui| {
                        ui.set_min_width(code);
                        ui.add(egui::Label::new(egui::RichText::new(cuda).monospace()).extend());
                        ui.add(egui::Label::new(egui::RichText::new(wgsl).monospace().weak()).extend());
                    });
                }
                ui.scope(|ui| {
                    ui.set_max_width(what_width);
                    ui.add(egui::Label::new(TEXT.get(lang, what)).wrap());
                });
                ui.end_row();
            }
        });
    });
}
