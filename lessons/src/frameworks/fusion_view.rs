//! Fusion: the pass run on the captured step — its groups (chains of
//! elementwise kernels, one generated kernel each), its decision for every
//! edge in words, launches and bytes before and after, and the WGSL the
//! generator writes for the longest group, read-only and highlighted.

use dlsys_core::memory::show_bytes;
use dlsys_core::names::Named as _;
use dlsys_shaders::codegen::validated;

use super::capture_view::Capture;
use super::fusion_time::ChainRace;
use super::{TEXT, t};
use crate::Env;

pub fn ui(ui: &mut egui::Ui, capture: &Capture, time: &mut ChainRace, env: &Env<'_>) {
    let lang = env.lang;
    ui.label(t(lang, "fusion.explain"));
    let Some(c) = capture.result() else {
        ui.weak(t(lang, "fusion.first"));
        return;
    };
    let f = &c.fusion;
    ui.label(TEXT.fill(
        lang,
        "fusion.summary",
        &[
            ("groups", &f.groups.len()),
            ("before", &f.launches_before),
            ("after", &f.launches_after),
            ("bbefore", &show_bytes(f.bytes_before)),
            ("bafter", &show_bytes(f.bytes_after)),
        ],
    ));
    for (i, g) in f.groups.iter().enumerate() {
        let nodes: Vec<String> = g.nodes.iter().map(|n| format!("%{n}")).collect();
        let ops: Vec<&str> = g.chain.ops.iter().map(|o| o.key()).collect();
        ui.label(TEXT.fill(
            lang,
            "fusion.group",
            &[
                ("group", &(i + 1)),
                ("nodes", &nodes.join(", ")),
                ("ops", &ops.join(" → ")),
                ("n", &g.n),
            ],
        ));
    }
    egui::CollapsingHeader::new(t(lang, "fusion.edges"))
        .id_salt("frameworks_fusion_edges")
        .show(ui, |ui| {
            for e in &f.edges {
                ui.label(format!("%{} → %{}: {}", e.from, e.to, e.verdict.name(lang)));
            }
        });
    if let Some((i, g)) = f.longest() {
        let label = TEXT.fill(lang, "fusion.wgsl", &[("group", &(i + 1))]);
        ui.label(&label);
        match validated(&g.chain, g.n, g.cols, false) {
            Ok(text) => {
                crate::kit::code_editor::show(ui, "frameworks_fusion_wgsl", &mut text.as_str(), &label, None);
            }
            // A generator bug: said as it is.
            Err(e) => {
                ui.colored_label(crate::kit::theme::bad(ui.visuals()), format!("{e:?}"));
            }
        }
    }
    time.ui(ui, c, env);
}
