// emulate_conv runs the Net's convolution kernels on the host, for
// TestTF32KernelsOnHost and TestTF32ParamsKernelOnHost: net_tf32.cu's
// conv3x3_forward_tf32 and conv3x3_backward_params_tf32 (mma.sync and
// cvt.rna emulated by hostshim.h) and, to compare with, net.cu's fp32
// conv3x3_forward, each at the grid and block its kernels.Launch gives; a
// parameter gradient's partial sums are then reduced by net.cu's
// params_reduce at its launch's grid. (net.cu's fp32 parameter gradient
// is not run here: its 256-thread blocks' shuffle reductions, emulated
// with barriers, take minutes on the host.)
//
// It reads from stdin sixteen little-endian int64s: kernel (0 fp32
// forward, 1 tf32 forward, 3 tf32 parameter gradient); n, cin, cout, side, relu, transposed; grid x, grid y, block,
// shared bytes; params count (for a parameter gradient, its length plen);
// chunk, chunks, params_reduce's grid x and block (parameter gradients
// only). A forward kernel then reads n*cin*side*side float32 inputs and
// the parameters, and writes the n*cout*side*side float32 outputs; a
// parameter gradient reads n*cout*side*side float32 output gradients and
// the n*cin*side*side inputs, and writes the plen float32 gradients.
#include <cstdio>
#include <vector>

#include "hostshim.h"
#include "../net_tf32.cu"

// net.cu's conv3x3_forward as host C++: TestTF32KernelsOnHost copies its
// text verbatim from net.cu (from its tiling's #defines to the kernel's
// end) into net_conv_fp32.inc, since the rest of net.cu has x86-foreign
// inline PTX. Its qualifiers are clang's attributes (nothing here), its
// dynamic shared memory the extern array w (defined here: blocks run one
// at a time), its special registers and __syncthreads the shim's.
float w[1 << 20];
#define __nvvm_read_ptx_sreg_tid_x() hs_tid_x
#define __nvvm_read_ptx_sreg_ntid_x() hs_ntid_x
#define __nvvm_read_ptx_sreg_ctaid_x() hs_ctaid_x
#define __nvvm_read_ptx_sreg_ctaid_y() hs_ctaid_y
#define __syncthreads() SYNCTHREADS()
static inline long long thread_index() { return (long long)hs_ctaid_x * hs_ntid_x + hs_tid_x; }
#undef __shared__
#define __shared__ // its only shared array is the extern w
#include "net_conv_fp32.inc"

// net.cu's params_reduce, copied the same way into net_reduce.inc.
#include "net_reduce.inc"

// params runs conv3x3_backward_params_tf32 and params_reduce, reading the
// rest of the input from stdin.
static int params(const long long *h) {
  int n = (int)h[1], cin = (int)h[2], cout = (int)h[3], side = (int)h[4];
  unsigned gx = (unsigned)h[7], gy = (unsigned)h[8], block = (unsigned)h[9];
  int plen = (int)h[11], chunk = (int)h[12], chunks = (int)h[13];
  unsigned rgx = (unsigned)h[14], rblock = (unsigned)h[15];
  long long area = (long long)side * side;
  std::vector<float> gout((size_t)(n * cout * area)), in((size_t)(n * cin * area));
  std::vector<float> partial((size_t)chunks * plen, -1e30f), grad((size_t)plen);
  if (fread(gout.data(), 4, gout.size(), stdin) != gout.size()) return 2;
  if (fread(in.data(), 4, in.size(), stdin) != in.size()) return 2;
  hs_launch_blocks(gx, gy, block, [&] {
    conv3x3_backward_params_tf32(gout.data(), in.data(), partial.data(), n, cin, cout, side, chunk);
  });
  hs_launch_blocks(rgx, 1, rblock, [&] { params_reduce(partial.data(), grad.data(), plen, chunks); });
  if (fwrite(grad.data(), 4, grad.size(), stdout) != grad.size()) return 3;
  return 0;
}

int main() {
  long long h[16];
  if (fread(h, sizeof h, 1, stdin) != 1) return 2;
  if (h[0] == 3) return params(h);
  int kernel = (int)h[0], n = (int)h[1], cin = (int)h[2], cout = (int)h[3], side = (int)h[4];
  int relu = (int)h[5], transposed = (int)h[6];
  unsigned gx = (unsigned)h[7], gy = (unsigned)h[8], block = (unsigned)h[9];
  long long shared = h[10], plen = h[11];
  if (shared > (long long)sizeof w) {
    fprintf(stderr, "emulate_conv: %lld bytes of shared memory, the emulation has %zu\n", shared,
            sizeof w);
    return 2;
  }
  long long area = (long long)side * side;
  std::vector<float> in((size_t)(n * cin * area)), p((size_t)plen), out((size_t)(n * cout * area));
  if (fread(in.data(), 4, in.size(), stdin) != in.size()) return 2;
  if (fread(p.data(), 4, p.size(), stdin) != p.size()) return 2;
  hs_launch_blocks(gx, gy, block, [&] {
    if (kernel == 1)
      conv3x3_forward_tf32(in.data(), p.data(), out.data(), n, cin, cout, side, relu, transposed);
    else
      conv3x3_forward(in.data(), p.data(), out.data(), n, cin, cout, side, relu, transposed);
  });
  if (fwrite(out.data(), 4, out.size(), stdout) != out.size()) return 3;
  return 0;
}
