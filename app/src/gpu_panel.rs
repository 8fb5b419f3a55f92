//! The "About this GPU" window's table: the adapter, its limits and the
//! features the lessons use, in the learner's language.

use dlsys_core::text::Lang;
use dlsys_lessons::GpuStatus;
use dlsys_lessons::kit::text as shell_text;

/// The "About this GPU" table.
pub fn gpu_info_ui(ui: &mut egui::Ui, gpu: &GpuStatus, lang: Lang) {
    let text = shell_text();
    let Some(info) = gpu.info() else {
        if let GpuStatus::Unavailable { reason } = gpu {
            ui.label(text.fill(lang, "gpu.none", &[("reason", &reason.message(lang))]));
        }
        return;
    };
    egui::Grid::new("gpu_info")
        .num_columns(2)
        .striped(true)
        .show(ui, |ui| {
            let mut row = |key: &str, value: String| {
                ui.label(text.get(lang, key));
                ui.label(value);
                ui.end_row();
            };
            row("gpu.adapter", dlsys_lessons::adapter_label(&info, lang));
            row("gpu.backend", info.backend.clone());
            row("gpu.device_type", info.device_type.clone());
            row(
                "gpu.driver",
                format!("{} {}", info.driver, info.driver_info)
                    .trim()
                    .to_owned(),
            );
            row(
                "gpu.compute",
                text.get(lang, if info.compute { "gpu.yes" } else { "gpu.no" })
                    .to_owned(),
            );
            row(
                "gpu.timestamp_period",
                format!("{} ns", info.timestamp_period_ns),
            );
            row(
                "gpu.subgroup_sizes",
                format!("{}–{}", info.subgroup_min_size, info.subgroup_max_size),
            );
            row(
                "gpu.limits",
                text.fill(
                    lang,
                    "gpu.limits_value",
                    &[
                        ("invocations", &info.max_compute_invocations_per_workgroup),
                        ("kib", &(info.max_compute_workgroup_storage_bytes / 1024)),
                        ("mib", &(info.max_storage_buffer_binding_bytes >> 20)),
                    ],
                ),
            );
        });
    ui.add_space(4.0);
    ui.strong(text.get(lang, "gpu.features"));
    for (name, enabled) in info.feature_flags() {
        let status = text.get(
            lang,
            if enabled {
                "gpu.enabled"
            } else {
                "gpu.not_offered"
            },
        );
        let color = if enabled {
            dlsys_lessons::kit::theme::good(ui.visuals())
        } else {
            ui.visuals().weak_text_color()
        };
        ui.colored_label(
            color,
            format!("{} {name}: {status}", if enabled { "✔" } else { "–" }),
        );
    }
    if let GpuStatus::RenderOnly { reason, .. } = gpu {
        ui.colored_label(
            dlsys_lessons::kit::theme::warn(ui.visuals()),
            text.fill(lang, "app.cpu_path", &[("reason", &reason.message(lang))]),
        );
    }
}
