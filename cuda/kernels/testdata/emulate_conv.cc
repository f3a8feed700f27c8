// emulate_conv runs the Net's convolution kernels on the host, for
// TestTF32KernelsOnHost: net_tf32.cu's conv3x3_forward_tf32 (mma.sync and
// cvt.rna emulated by hostshim.h) and, to compare with, net.cu's fp32
// conv3x3_forward, each at the grid and block its kernels.Launch gives. It
// reads from stdin twelve little-endian int64s (kernel: 0 fp32, 1 tf32;
// n, cin, cout, side, relu, transposed; grid x, grid y, block, shared
// bytes; params count), then n*cin*side*side float32 inputs and the
// parameters, and writes the n*cout*side*side float32 outputs to stdout.
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

int main() {
  long long h[12];
  if (fread(h, sizeof h, 1, stdin) != 1) return 2;
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
