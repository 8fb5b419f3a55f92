use super::*;

#[test]
fn the_copy_kernel_runs_first_and_selections_keep_ladder_order() {
    let mut settings = LadderSettings::everything(Problem::new(8, 8), Data::Random, 3);
    settings.softmax = vec![SoftmaxKind::Online, SoftmaxKind::ThreePass];
    settings.reduce = vec![ReduceKind::GridStride];
    settings.ops = vec![ReduceOp::Max];
    assert_eq!(
        settings.kernels(),
        vec![
            Kernel::Copy,
            Kernel::Softmax(SoftmaxKind::ThreePass),
            Kernel::Softmax(SoftmaxKind::Online),
            Kernel::Reduce(ReduceKind::GridStride, ReduceOp::Max),
        ]
    );
}

#[test]
fn sizes_are_refused_before_anything_is_allocated() {
    let huge = LadderSettings::everything(Problem::new(u32::MAX, u32::MAX), Data::Random, 1);
    assert!(Ladder::new(&huge, MAX_ELEMENTS).is_err_and(|e| e.to_string().contains("buffer")));
    let big = LadderSettings::everything(Problem::new(1024, 1025), Data::Random, 1);
    assert!(Ladder::new(&big, 1 << 20).is_err_and(|e| e.to_string().contains("1048576")));
    assert!(Ladder::new(&big, 1 << 21).is_ok());
    let empty = LadderSettings::everything(Problem::new(0, 4), Data::Random, 1);
    assert!(Ladder::new(&empty, MAX_ELEMENTS).is_err());
}

#[test]
fn the_cpu_path_reports_every_kernel_with_its_own_problem() {
    let settings = LadderSettings::everything(Problem::new(3, 10), Data::Random, 1);
    let outcomes = Ladder::new(&settings, CPU_MAX_ELEMENTS)
        .map(Ladder::run_on_cpu)
        .unwrap_or_default();
    assert_eq!(outcomes.len(), settings.kernels().len());
    for o in &outcomes {
        let Outcome::Cpu(c) = o else { panic!("{o:?}") };
        assert_eq!(c.problem, c.kernel.problem_for(settings.problem));
    }
}
