// hostshim.h compiles a .cu of cuda/kernels as C++ on the host (g++), for
// TestTransformKernelsOnHost and TestTF32KernelsOnHost: the CUDA
// qualifiers become nothing, the thread indices read thread-local
// variables that the launchers set.
//
// Two launchers. hs_launch runs a grid's threads one after the other: it
// serves kernels that neither synchronise nor share memory (every thread
// of the transform kernels is independent), so running them in sequence
// is running them. hs_launch_blocks runs one block at a time with each of
// its threads a host thread, so that __syncthreads (SYNCTHREADS(): a
// barrier of the block's threads), shared memory (__shared__ becomes
// static: one copy, which the block's threads share, blocks running one
// after the other) and the warp-collective mma.sync (mma_tf32: the 32
// lanes of a warp exchange their fragments, each lane then computes its
// own accumulators from the whole tile) behave as on the GPU. A barrier
// that some thread never reaches (a kernel whose lanes diverge around
// mma.sync or __syncthreads) aborts after 20 s instead of hanging.
//
// mma_tf32 and to_tf32 follow the PTX ISA: cvt.rna.tf32.f32 rounds to 10
// mantissa bits, to nearest, ties away from zero, leaving the low 13 bits
// zero; mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 takes A (16x8)
// in four registers a lane, B (8x8) in two and C/D (16x8) in four, with
// groupID = lane>>2 and threadID_in_group = lane%4:
//   a0 (groupID, tig)   a1 (groupID+8, tig)   a2 (groupID, tig+4)   a3 (groupID+8, tig+4)
//   b0 (tig, groupID)   b1 (tig+4, groupID)
//   c0 (groupID, 2*tig) c1 (groupID, 2*tig+1) c2 (groupID+8, 2*tig) c3 (groupID+8, 2*tig+1)
// (row, column). An operand that is not TF32 (low bits set: not passed
// through cvt) aborts: the ISA leaves its result unspecified. The ISA does
// not specify the order or rounding of the tensor core's float32 sum; the
// emulation takes the least accurate plausible one, adding the eight exact
// products (a TF32 product has at most 22 significant bits) to C one at a
// time, each addition rounded to float32.
#define HEADSPACE_HOST 1
#define __global__
#define __device__
#define __shared__ static

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

static thread_local unsigned hs_tid_x, hs_ctaid_x, hs_ctaid_y, hs_ntid_x;
#define TID_X() hs_tid_x
#define CTAID_X() hs_ctaid_x
#define CTAID_Y() hs_ctaid_y
#define NTID_X() hs_ntid_x
#define MULHI64(a, b) \
  ((unsigned long long)(((unsigned __int128)(a) * (unsigned __int128)(b)) >> 64))

// hs_launch runs f for every thread of a grid of grid×block threads (x
// only, as the transform kernels launch), one after the other.
template <typename F>
static void hs_launch(unsigned grid, unsigned block, F f) {
  hs_ntid_x = block;
  for (hs_ctaid_x = 0; hs_ctaid_x < grid; hs_ctaid_x++)
    for (hs_tid_x = 0; hs_tid_x < block; hs_tid_x++) f();
}

// hs_barrier is a reusable barrier of count threads.
struct hs_barrier {
  explicit hs_barrier(unsigned count) : count(count) {}
  void wait(const char *what) {
    std::unique_lock<std::mutex> l(mu);
    unsigned gen = generation;
    if (++arrived == count) {
      arrived = 0;
      generation++;
      cv.notify_all();
      return;
    }
    if (!cv.wait_for(l, std::chrono::seconds(20), [&] { return generation != gen; })) {
      fprintf(stderr, "hostshim: %s: %u of %u threads arrived in 20 s (divergent threads?)\n", what,
              arrived, count);
      abort();
    }
  }
  std::mutex mu;
  std::condition_variable cv;
  unsigned count, arrived = 0, generation = 0;
};

// hs_warp is one warp's exchange for mma.sync: each lane's fragments.
struct hs_warp {
  hs_warp() : bar(32) {}
  hs_barrier bar;
  unsigned a[32][4], b[32][2];
  float c[32][4];
};

// hs_block is the block the calling host thread belongs to.
struct hs_block {
  explicit hs_block(unsigned threads) : bar(threads), warps(threads / 32) {}
  hs_barrier bar;
  std::vector<hs_warp> warps;
};
static thread_local hs_block *hs_cur_block;

#define SYNCTHREADS() hs_cur_block->bar.wait("__syncthreads")

// hs_launch_blocks runs f for a grid of gx×gy blocks of block threads (a
// multiple of 32), each block's threads as host threads, one block at a
// time.
template <typename F>
static void hs_launch_blocks(unsigned gx, unsigned gy, unsigned block, F f) {
  if (block % 32 != 0) {
    fprintf(stderr, "hostshim: a block of %u threads is not whole warps\n", block);
    abort();
  }
  for (unsigned by = 0; by < gy; by++)
    for (unsigned bx = 0; bx < gx; bx++) {
      hs_block blk(block);
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < block; t++)
        ts.emplace_back([&, t] {
          hs_tid_x = t, hs_ntid_x = block, hs_ctaid_x = bx, hs_ctaid_y = by;
          hs_cur_block = &blk;
          f();
        });
      for (auto &th : ts) th.join();
    }
}

// to_tf32 is cvt.rna.tf32.f32.
static inline unsigned to_tf32(float v) {
  unsigned u;
  memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return u; // Inf and NaN stay
  return (u + 0x1000u) & 0xffffe000u;             // magnitude + half a TF32 ulp, truncated
}

static inline float hs_f32(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// mma_tf32 is mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 with D = C
// in place: d = A*B + d, collectively by the 32 lanes of the warp.
static inline void mma_tf32(float d[4], const unsigned a[4], const unsigned b[2]) {
  int lane = hs_tid_x & 31;
  hs_warp &w = hs_cur_block->warps[hs_tid_x >> 5];
  for (int r = 0; r < 4; r++) {
    if (a[r] & 0x1fffu) {
      fprintf(stderr, "hostshim: mma.sync: lane %d's a%d = %#x is not TF32\n", lane, r, a[r]);
      abort();
    }
    w.a[lane][r] = a[r];
    w.c[lane][r] = d[r];
  }
  for (int r = 0; r < 2; r++) {
    if (b[r] & 0x1fffu) {
      fprintf(stderr, "hostshim: mma.sync: lane %d's b%d = %#x is not TF32\n", lane, r, b[r]);
      abort();
    }
    w.b[lane][r] = b[r];
  }
  w.bar.wait("mma.sync");
  // The whole tile, from every lane's fragments.
  float A[16][8], B[8][8];
  for (int l = 0; l < 32; l++) {
    int g = l >> 2, t = l & 3;
    A[g][t] = hs_f32(w.a[l][0]);
    A[g + 8][t] = hs_f32(w.a[l][1]);
    A[g][t + 4] = hs_f32(w.a[l][2]);
    A[g + 8][t + 4] = hs_f32(w.a[l][3]);
    B[t][g] = hs_f32(w.b[l][0]);
    B[t + 4][g] = hs_f32(w.b[l][1]);
  }
  int g = lane >> 2, t = lane & 3;
  for (int r = 0; r < 4; r++) {
    int row = g + (r >= 2 ? 8 : 0), col = 2 * t + (r & 1);
    float sum = w.c[lane][r];
    for (int k = 0; k < 8; k++) sum += A[row][k] * B[k][col]; // exact product, rounded sum
    d[r] = sum;
  }
  w.bar.wait("mma.sync"); // no lane overwrites the exchange before all have read it
}
