// hostshim.h compiles a .cu of cuda/kernels as C++ on the host (g++), for
// TestTransformKernelsOnHost: the CUDA qualifiers become nothing, the
// thread indices read variables that hs_launch sets, and hs_launch runs a
// grid's threads one after the other. It serves kernels that neither
// synchronise nor share memory (every thread of the transform kernels is
// independent), so running them in sequence is running them.
#define HEADSPACE_HOST 1
#define __global__
#define __device__

static unsigned hs_tid_x, hs_ctaid_x, hs_ntid_x;
#define TID_X() hs_tid_x
#define CTAID_X() hs_ctaid_x
#define NTID_X() hs_ntid_x
#define MULHI64(a, b) \
  ((unsigned long long)(((unsigned __int128)(a) * (unsigned __int128)(b)) >> 64))

// hs_launch runs f for every thread of a grid of grid×block threads (x
// only, as the transform kernels launch).
template <typename F>
static void hs_launch(unsigned grid, unsigned block, F f) {
  hs_ntid_x = block;
  for (hs_ctaid_x = 0; hs_ctaid_x < grid; hs_ctaid_x++)
    for (hs_tid_x = 0; hs_tid_x < block; hs_tid_x++) f();
}
