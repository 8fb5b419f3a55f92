// Exercise: fused bias + ReLU, y = max(x + bias, 0), the bias broadcast over rows.
//
// The harness provides (keep these declarations as they are):
//   params.rows, params.cols   x and y are rows × cols, row-major
//   params.n                   rows × cols
//   x, bias                    the input and the bias (cols values)
//   y                          the output
// It dispatches ceil(n / 256) workgroups of @workgroup_size(256), so the
// last workgroup may run past the end of the data.
// Checked on n = 1, 257, cols = 1, 3, 257, more than one workgroup, ±inf.
//
// 中文：
// 练习：融合偏置 + ReLU（kernel 融合），y = max(x + bias, 0)，偏置 bias 广播到每一行。
//
// 测试框架（harness）提供以下声明（请保持原样）：
//   params.rows, params.cols   x 和 y 都是 rows × cols，按行主序存储
//   params.n                   rows × cols
//   x, bias                    输入和偏置（cols 个值）
//   y                          输出
// dispatch ceil(n / 256) 个 @workgroup_size(256) 的工作组（相当于 CUDA 的线程块），
// 所以最后一个工作组可能越过数据末尾。
// 检查用例：n = 1、257，cols = 1、3、257，多于一个工作组，±inf。
// @harness-declarations

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    //en TODO: guard i against n; which bias element belongs to element i?
    //zh TODO：先检查 i 是否越界（与 n 比较）；第 i 个元素该加哪个 bias 元素？
    y[i] = x[i];
}
