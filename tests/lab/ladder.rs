//! The GPU lesson and `dlsys-lab bench kernels` run one `Ladder`: given the
//! same choices they run the same variants in the same order, with the same
//! warm-up, trials and inputs (seeds), by construction — and this test holds
//! them to it, through the lesson's settings and through the CLI's parser.

use clap::Parser as _;
use dlsys_core::kernels::{Data, Kernel, ReduceOp, SoftmaxKind};
use dlsys_lab::cli::{BenchWhat, Cli, Command};
use dlsys_shaders::Ladder;
use dlsys_shaders::ladder::MAX_ELEMENTS;

/// `dlsys-lab bench kernels` on a 48 × 100 problem, 3 trials, `--data`, `--op`.
fn cli_ladder(data: &str, op: &str) -> Ladder {
    let args = [
        "dlsys-lab",
        "bench",
        "kernels",
        "--rows",
        "48",
        "--cols",
        "100",
        "--trials",
        "3",
        "--data",
        data,
        "--op",
        op,
    ];
    let cli = Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{e}"));
    let Some(Command::Bench {
        what: BenchWhat::Kernels(bench),
    }) = cli.command
    else {
        panic!("not a bench command")
    };
    Ladder::new(&bench.ladder(), MAX_ELEMENTS).unwrap_or_else(|e| panic!("{e}"))
}

fn lesson_ladder(settings: &dlsys_lessons::gpu_kernels::Settings) -> Ladder {
    Ladder::new(&settings.ladder(true), MAX_ELEMENTS).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_same(a: &Ladder, b: &Ladder) {
    let (sa, sb) = (a.specs(), b.specs());
    assert_eq!(
        sa, sb,
        "variants, order, problems, warm-up or trials differ"
    );
    assert!(sa.first().is_some_and(|s| s.kernel == Kernel::Copy));
    for spec in sa {
        assert_eq!(
            a.inputs().fingerprint(spec.kernel),
            b.inputs().fingerprint(spec.kernel),
            "{} gets other input",
            spec.kernel.id()
        );
    }
}

#[test]
fn the_lesson_and_the_cli_run_the_same_ladder() {
    for (data, op) in [
        (Data::Random, ReduceOp::Sum),
        (Data::HugeLogits, ReduceOp::Max),
    ] {
        let settings = dlsys_lessons::gpu_kernels::Settings {
            rows: 48,
            cols: 100,
            data,
            trials: 3,
            op,
            ..Default::default()
        };
        let cli = cli_ladder(data.id(), op.id());
        assert_same(&lesson_ladder(&settings), &cli);
    }
}

#[test]
fn a_different_choice_is_told_apart() {
    let settings = dlsys_lessons::gpu_kernels::Settings {
        rows: 48,
        cols: 100,
        trials: 3,
        data: Data::Random,
        ..Default::default()
    };
    let other = cli_ladder("huge", "sum");
    let lesson = lesson_ladder(&settings);
    assert_eq!(lesson.specs(), other.specs(), "same variants, other data");
    assert_ne!(
        lesson
            .inputs()
            .fingerprint(Kernel::Softmax(SoftmaxKind::ThreePass)),
        other
            .inputs()
            .fingerprint(Kernel::Softmax(SoftmaxKind::ThreePass)),
        "random and huge logits must hash apart, or the equality test above proves nothing"
    );
}
