// Exercise: sum reduction.
//
// The harness provides (keep these declarations as they are):
//   params.n       how many values x holds (1 up to 2^20)
//   params.neg_inf −inf (WGSL has no infinity literal)
//   x              the input, params.n values
//   y              one value: write the sum of x into y[0]
// It dispatches ONE workgroup: @workgroup_size(256), dispatchWorkgroups(1).
// So each of the 256 invocations must add up many elements.
// Checked on n = 1, 2, 255, 256, 257, 1023, 1025, 100000, and with a +inf.
//
// 中文：
// 练习：求和归约（reduction）。
//
// 测试框架（harness）提供以下声明（请保持原样）：
//   params.n       x 中值的个数（1 到 2^20）
//   params.neg_inf −inf（WGSL 没有无穷大字面量）
//   x              输入，共 params.n 个值
//   y              只有一个值：把 x 的和写进 y[0]
// 只 dispatch 一个工作组（相当于 CUDA 的线程块）：
// @workgroup_size(256)，dispatchWorkgroups(1)。
// 所以 256 个线程（invocation）每个都要累加很多个元素。
// 检查用例：n = 1、2、255、256、257、1023、1025、100000，以及含 +inf 的输入。
// @harness-declarations

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32) {
    //en TODO 1. Add x[tid], x[tid + 256], x[tid + 512], … (while < params.n)
    //en         into a private total.
    //en TODO 2. partial[tid] = total; then halve: for stride 128, 64, …, 1,
    //en         if tid < stride, partial[tid] += partial[tid + stride],
    //en         with workgroupBarrier() before every step.
    //en TODO 3. Invocation 0 writes partial[0] to y[0].
    //zh TODO 1. 累加 x[tid]、x[tid + 256]、x[tid + 512]、……（只要 < params.n），
    //zh         存进一个私有变量 total。
    //zh TODO 2. partial[tid] = total；然后对半归约：stride 依次为 128、64、……、1，
    //zh         若 tid < stride，则 partial[tid] += partial[tid + stride]，
    //zh         每一步之前都要 workgroupBarrier()。
    //zh TODO 3. 线程 0 把 partial[0] 写到 y[0]。
    if (tid == 0u) {
        y[0] = 0.0;
    }
}
