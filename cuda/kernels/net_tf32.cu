// The Net's 3x3 convolution on TF32 tensor cores (--precision tf32): the
// forward pass and the data gradient of net.cu's conv3x3_forward, same
// parameters and same result up to TF32's rounding, computed as an
// implicit GEMM with PTX's warp-level
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, as cuDNN does by
// default on Ampere and Hopper, and the parameter gradient's partial sums
// (conv3x3_backward_params_tf32, net.cu's conv3x3_backward_params_partial's
// parameters and partial-sum layout, reduced by net.cu's params_reduce), so
// that --precision tf32 covers the whole step's convolutions. net.cu's fp32
// kernels are untouched (--precision fp32, the default, runs them).
//
// The GEMM: D[q][o] = sum over k of A[q][k] * B[k][o] (+ bias[o]), with q a
// position (s, y, x) of the n*side*side, o an output channel and
// k = i*9 + ky*3 + kx over the cin*9 taps: A[q][k] = in[s,i,y+ky-1,x+kx-1]
// (zero outside the image: im2col, never materialised) and
// B[k][o] = p[o,i,ky,kx] (transposed: p[i,o,2-ky,2-kx], the data gradient,
// no bias). Both operands are rounded to TF32 (cvt.rna.tf32.f32: 10
// mantissa bits, to nearest, ties away from zero) once, when staged in
// shared memory; the products and sums are float32 in the tensor core.
//
// Block (bx, by) of TF32_THREADS threads (4 warps) computes positions
// bx*TF32_TM on (warp w: 16 of them, w*16 on) for output channels
// by*TF32_TN on (four 8-wide MMA tiles a warp), walking k in chunks of
// TF32_KC: all threads stage the chunk's A (TF32_TM x TF32_KC) and B
// (TF32_KC x TF32_TN) tiles in shared memory, synchronise, each warp runs
// TF32_KC/8 x 4 MMAs from its fragments, synchronise. Every thread reaches
// every __syncthreads and every mma.sync (the warp's lanes all take part):
// out-of-range positions and channels compute zeros and are not stored.
// The shared tiles are padded by 8 floats a row so that a fragment's 32
// loads hit 32 different banks.
//
// Compiled to PTX by `make ptx` (clang, sm_80); compiled as C++ on the host
// by TestTF32KernelsOnHost with testdata/hostshim.h, which runs each
// block's threads as host threads with __syncthreads a barrier, shared
// memory static, and mma.sync and cvt.rna emulated per the PTX ISA's
// fragment layouts. Hence the macros below.
#ifndef HEADSPACE_HOST
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define TID_X() __nvvm_read_ptx_sreg_tid_x()
#define CTAID_X() __nvvm_read_ptx_sreg_ctaid_x()
#define CTAID_Y() __nvvm_read_ptx_sreg_ctaid_y()
#define SYNCTHREADS() __syncthreads()

// cvt.rna.tf32.f32: v rounded to TF32, in a 32-bit register (the low 13
// bits zero).
static __device__ inline unsigned to_tf32(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

// d = A*B + d for the warp's 16x8x8 tile: a holds this lane's four A
// elements, b its two B elements, d its four accumulators (the PTX ISA's
// m16n8k8 .tf32 fragment layouts; see the kernel).
static __device__ inline void mma_tf32(float d[4], const unsigned a[4], const unsigned b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

#define TF32_THREADS 128
#define TF32_TM 64 // positions a block: 16 a warp
#define TF32_TN 32 // output channels a block: four MMA tiles of 8
#define TF32_KC 32 // taps staged at a time: four MMA steps of 8
#define TF32_PAD 8

extern "C" __global__ void conv3x3_forward_tf32(const float *in, const float *p, float *out,
                                                int n, int cin, int cout, int side, int relu,
                                                int transposed) {
  __shared__ unsigned as[TF32_KC][TF32_TM + TF32_PAD];
  __shared__ unsigned bs[TF32_KC][TF32_TN + TF32_PAD];
  int tid = TID_X();
  int lane = tid & 31, warp = tid >> 5;
  int group = lane >> 2, tig = lane & 3; // the ISA's groupID, threadID_in_group
  long long area = (long long)side * side;
  long long positions = (long long)n * area;
  long long q0 = (long long)CTAID_X() * TF32_TM;
  int o0 = CTAID_Y() * TF32_TN;
  int taps = cin * 9;

  // The A element this thread stages: position m = tid % TF32_TM of the
  // block, taps tid / TF32_TM + 2j of the chunk.
  int m = tid % TF32_TM;
  long long q = q0 + m;
  bool qIn = q < positions;
  long long s = qIn ? q / area : 0;
  int pix = qIn ? (int)(q % area) : 0;
  int y = pix / side, x = pix % side;
  const float *sample = in + s * cin * area;

  // The accumulators: tile j, c0..c3 at (position group, channel 2*tig),
  // (group, 2*tig+1), (group+8, 2*tig), (group+8, 2*tig+1).
  float acc[4][4];
  for (int j = 0; j < 4; j++) {
    for (int h = 0; h < 2; h++) {
      int o = o0 + 8 * j + 2 * tig + h;
      float b = (!transposed && o < cout) ? p[(long long)cout * cin * 9 + o] : 0.0f;
      acc[j][h] = b;
      acc[j][2 + h] = b;
    }
  }

  for (int k0 = 0; k0 < taps; k0 += TF32_KC) {
    for (int kk = tid / TF32_TM; kk < TF32_KC; kk += TF32_THREADS / TF32_TM) {
      int k = k0 + kk;
      float v = 0.0f;
      if (qIn && k < taps) {
        int i = k / 9, t = k % 9;
        int yy = y + t / 3 - 1, xx = x + t % 3 - 1;
        if (yy >= 0 && yy < side && xx >= 0 && xx < side) v = sample[i * area + yy * side + xx];
      }
      as[kk][m] = to_tf32(v);
    }
    for (int e = tid; e < TF32_KC * TF32_TN; e += TF32_THREADS) {
      int kk = e / TF32_TN, nn = e % TF32_TN;
      int k = k0 + kk, o = o0 + nn;
      float v = 0.0f;
      if (k < taps && o < cout) {
        int i = k / 9, t = k % 9;
        v = transposed ? p[((long long)i * cout + o) * 9 + 8 - t] : p[((long long)o * cin + i) * 9 + t];
      }
      bs[kk][nn] = to_tf32(v);
    }
    SYNCTHREADS();
    for (int ks = 0; ks < TF32_KC; ks += 8) {
      // A fragment: a0 (row group, col tig), a1 (group+8, tig),
      // a2 (group, tig+4), a3 (group+8, tig+4); rows are positions,
      // columns taps.
      unsigned a[4];
      int r = warp * 16 + group;
      a[0] = as[ks + tig][r];
      a[1] = as[ks + tig][r + 8];
      a[2] = as[ks + tig + 4][r];
      a[3] = as[ks + tig + 4][r + 8];
      for (int j = 0; j < 4; j++) {
        // B fragment: b0 (row tig, col group), b1 (tig+4, group); rows
        // are taps, columns output channels.
        unsigned b[2];
        b[0] = bs[ks + tig][8 * j + group];
        b[1] = bs[ks + tig + 4][8 * j + group];
        mma_tf32(acc[j], a, b);
      }
    }
    SYNCTHREADS();
  }

  for (int h = 0; h < 2; h++) {
    long long qo = q0 + warp * 16 + group + 8 * h;
    if (qo >= positions) continue;
    long long so = qo / area, po = qo % area;
    for (int j = 0; j < 4; j++) {
      for (int c = 0; c < 2; c++) {
        int o = o0 + 8 * j + 2 * tig + c;
        if (o >= cout) continue;
        float v = acc[j][2 * h + c];
        if (relu && v < 0.0f) v = 0.0f;
        out[(so * cout + o) * area + po] = v;
      }
    }
  }
}

// The parameter gradient's partial sums on TF32 tensor cores: what net.cu's
// conv3x3_backward_params_partial writes, same parameters, same layout of
// partial (chunk c's sums at partial[c*plen + index], index in the
// parameters' layout, plen = cout*cin*9 + cout), which params_reduce then
// sums over the chunks in fp32.
//
// The GEMM: D[m][o] = sum over q of A[m][q] * B[q][o], with m a tap
// k = i*9 + ky*3 + kx of the cin*9, plus one more row m = cin*9 for the
// bias, o an output channel and q a position (s, y, x) of the chunk:
// A[k][q] = in[s,i,y+ky-1,x+kx-1] (zero outside the image), A[cin*9][q] = 1
// (exact in TF32), B[q][o] = gout[s,o,y,x]. It is the forward kernel's GEMM
// with the roles swapped (rows taps, columns channels, the reduction over
// positions), so the shared tiles, the fragments and the MMA loop are the
// same: as[position][tap], bs[position][channel], both rounded to TF32 once
// when staged.
//
// Block (bx, by) of TF32_THREADS threads computes taps (bx % tblocks) *
// TF32_TM on for output channels by*TF32_TN on over chunk bx / tblocks
// (tblocks = ceil((cin*9+1) / TF32_TM); the chunks are on x, whose limit is
// 2^31-1, not on y), walking the chunk's positions TF32_KC at a time.
// Thread tid stages position tid % TF32_KC of the step (computing its
// (s, y, x) once) for taps tid / TF32_KC + 4j and channels tid / TF32_KC + 4j:
// consecutive threads read consecutive pixels. n*side*side must be under
// 2^31, as for the fp32 kernel.
extern "C" __global__ void conv3x3_backward_params_tf32(const float *gout, const float *in,
                                                        float *partial, int n, int cin, int cout,
                                                        int side, int chunk) {
  __shared__ unsigned as[TF32_KC][TF32_TM + TF32_PAD];
  __shared__ unsigned bs[TF32_KC][TF32_TN + TF32_PAD];
  int tid = TID_X();
  int lane = tid & 31, warp = tid >> 5;
  int group = lane >> 2, tig = lane & 3;
  int taps = cin * 9;
  int tblocks = (taps + 1 + TF32_TM - 1) / TF32_TM;
  int bx = CTAID_X();
  int c = bx / tblocks;
  int m0 = (bx % tblocks) * TF32_TM;
  int o0 = CTAID_Y() * TF32_TN;
  int area = side * side;
  int positions = n * area;
  int start = c * chunk;
  int end = chunk < positions - start ? start + chunk : positions;

  float acc[4][4];
  for (int j = 0; j < 4; j++)
    for (int r = 0; r < 4; r++) acc[j][r] = 0.0f;

  int kk = tid % TF32_KC, row = tid / TF32_KC;
  for (int q0 = start; q0 < end; q0 += TF32_KC) {
    int q = q0 + kk;
    bool qIn = q < end;
    int s = qIn ? q / area : 0;
    int pix = qIn ? q - s * area : 0;
    int y = pix / side, x = pix % side;
    for (int mm = row; mm < TF32_TM; mm += TF32_THREADS / TF32_KC) {
      int k = m0 + mm;
      float v = 0.0f;
      if (qIn && k < taps) {
        int i = k / 9, t = k % 9;
        int yy = y + t / 3 - 1, xx = x + t % 3 - 1;
        if (yy >= 0 && yy < side && xx >= 0 && xx < side)
          v = in[((long long)s * cin + i) * area + yy * side + xx];
      } else if (qIn && k == taps) {
        v = 1.0f;
      }
      as[kk][mm] = to_tf32(v);
    }
    for (int nn = row; nn < TF32_TN; nn += TF32_THREADS / TF32_KC) {
      int o = o0 + nn;
      float v = 0.0f;
      if (qIn && o < cout) v = gout[((long long)s * cout + o) * area + pix];
      bs[kk][nn] = to_tf32(v);
    }
    SYNCTHREADS();
    for (int ks = 0; ks < TF32_KC; ks += 8) {
      // The forward kernel's fragments: A rows are taps, columns
      // positions; B rows positions, columns channels.
      unsigned a[4];
      int r = warp * 16 + group;
      a[0] = as[ks + tig][r];
      a[1] = as[ks + tig][r + 8];
      a[2] = as[ks + tig + 4][r];
      a[3] = as[ks + tig + 4][r + 8];
      for (int j = 0; j < 4; j++) {
        unsigned b[2];
        b[0] = bs[ks + tig][8 * j + group];
        b[1] = bs[ks + tig + 4][8 * j + group];
        mma_tf32(acc[j], a, b);
      }
    }
    SYNCTHREADS();
  }

  long long plen = (long long)cout * taps + cout;
  float *dst = partial + (long long)c * plen;
  for (int h = 0; h < 2; h++) {
    int m = m0 + warp * 16 + group + 8 * h;
    if (m > taps) continue;
    for (int j = 0; j < 4; j++) {
      for (int cc = 0; cc < 2; cc++) {
        int o = o0 + 8 * j + 2 * tig + cc;
        if (o >= cout) continue;
        if (m < taps)
          dst[(long long)o * taps + m] = acc[j][2 * h + cc];
        else
          dst[(long long)taps * cout + o] = acc[j][2 * h + cc];
      }
    }
  }
}
