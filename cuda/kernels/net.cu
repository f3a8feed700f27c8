// The CUDA kernels of document 003's Net, float32, NCHW. Compiled to PTX
// without a CUDA toolkit by `make ptx` (clang -x cuda --cuda-device-only
// -nocudainc -nocudalib), so the CUDA qualifiers are spelled as clang's
// attributes and the thread indices read from the NVVM special registers.
// There is no libdevice either: exp and log are ex2.approx and lg2.approx.
//
// Plain CUDA C, tiled only enough that loads stop bounding the arithmetic:
// the forward pass and the data gradient (the same kernel, the data
// gradient being a convolution with the kernel transposed and flipped) give
// each thread 4 pixels × 10 output channels, with the block's weights in
// shared memory; the parameter gradients split their batch×height×width sum
// across blocks (partial sums for 5 output channels a block, then a second
// kernel). Everything else is one thread per element.
// Package cuda/kernels (plan.go) builds the launches; its comments give each
// kernel's grid and block, and cuda/netref is the float64 reference.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))

// The block size of conv3x3_backward_params_partial and
// softmax_cross_entropy (a power of two: they reduce in shared memory).
#define REDUCE_THREADS 256

static __device__ inline long long thread_index() {
  return (long long)__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() +
         __nvvm_read_ptx_sreg_tid_x();
}

// The tiling of conv3x3_forward: each thread computes CONV_PX adjacent
// pixels of one row for CONV_OB output channels, so each input value it
// loads serves CONV_OB outputs and each weight CONV_PX (one thread per
// output element loaded two values per multiply-add: on an H100 the Net's
// step took 280 ms that way, against PyTorch's 68 ms).
#define CONV_OB 10
#define CONV_PX 4
// The block size of conv3x3_forward.
#define CONV_THREADS 128
// The output channels per block of conv3x3_backward_params_partial: each
// input value it loads serves CONV_PO of them.
#define CONV_PO 5

// out[s,o,y,x] = p[bias o] + sum over i, ky, kx of in[s,i,y+ky-1,x+kx-1] *
// p[o,i,ky,kx] (zero padding), then max(0, .) if relu; p holds cout*cin*9
// weights then cout biases. With transposed, it is the data gradient of
// the convolution whose parameters p are (cout inputs, cin outputs):
// out[s,o,y,x] = sum over i, ky, kx of in[s,i,y-ky+1,x-kx+1] * p[i,o,ky,kx],
// computed as a forward convolution with the kernel flipped,
// p[i,o,2-ky,2-kx], and no bias.
//
// Block (bx, g) of CONV_THREADS threads: output channels g*CONV_OB on;
// thread t of the grid's x takes row t / quads (of n*side rows) and the
// CONV_PX pixels from (t % quads)*CONV_PX, quads = ceil(side/CONV_PX). The
// block first copies its channels' weights to shared memory (dynamic:
// cin*9*CONV_OB floats), laid out [i][ky*3+kx][o].
extern "C" __global__ void conv3x3_forward(const float *in, const float *p, float *out, int n,
                                           int cin, int cout, int side, int relu,
                                           int transposed) {
  extern __shared__ float w[];
  int tid = __nvvm_read_ptx_sreg_tid_x();
  int threads = __nvvm_read_ptx_sreg_ntid_x();
  int o0 = __nvvm_read_ptx_sreg_ctaid_y() * CONV_OB;
  int og = cout - o0 < CONV_OB ? cout - o0 : CONV_OB;
  for (int j = tid; j < cin * 9 * CONV_OB; j += threads) {
    int ob = j % CONV_OB, k = (j / CONV_OB) % 9, i = j / (CONV_OB * 9);
    float v = 0.0f;
    if (ob < og)
      v = transposed ? p[((long long)i * cout + o0 + ob) * 9 + 8 - k]
                     : p[((long long)(o0 + ob) * cin + i) * 9 + k];
    w[j] = v;
  }
  __syncthreads();
  int quads = (side + CONV_PX - 1) / CONV_PX;
  long long t = thread_index();
  if (t >= (long long)n * side * quads) return;
  int x0 = (int)(t % quads) * CONV_PX;
  long long row = t / quads;
  int y = (int)(row % side);
  long long s = row / side;
  long long area = (long long)side * side;
  float acc[CONV_OB][CONV_PX];
#pragma unroll
  for (int ob = 0; ob < CONV_OB; ob++) {
    float b = (!transposed && ob < og) ? p[(long long)cout * cin * 9 + o0 + ob] : 0.0f;
#pragma unroll
    for (int px = 0; px < CONV_PX; px++) acc[ob][px] = b;
  }
  for (int i = 0; i < cin; i++) {
    const float *plane = in + (s * cin + i) * area;
    float v[3][CONV_PX + 2];
#pragma unroll
    for (int ky = 0; ky < 3; ky++) {
      int yy = y + ky - 1;
      bool rowIn = yy >= 0 && yy < side;
#pragma unroll
      for (int c = 0; c < CONV_PX + 2; c++) {
        int xx = x0 + c - 1;
        v[ky][c] = rowIn && xx >= 0 && xx < side ? plane[yy * side + xx] : 0.0f;
      }
    }
    const float *wi = w + i * 9 * CONV_OB;
#pragma unroll
    for (int k = 0; k < 9; k++) {
#pragma unroll
      for (int ob = 0; ob < CONV_OB; ob++) {
        float wv = wi[k * CONV_OB + ob];
#pragma unroll
        for (int px = 0; px < CONV_PX; px++) acc[ob][px] += v[k / 3][px + k % 3] * wv;
      }
    }
  }
#pragma unroll
  for (int ob = 0; ob < CONV_OB; ob++) {
    float *dst = out + ((s * cout + o0 + ob) * area) + (long long)y * side + x0;
#pragma unroll
    for (int px = 0; px < CONV_PX; px++) {
      float val = acc[ob][px];
      if (relu && val < 0.0f) val = 0.0f;
      if (ob < og && x0 + px < side) dst[px] = val;
    }
  }
}

// The value of lane+delta of the warp (all 32 lanes take part): PTX's
// shfl.sync, written out since clang's builtin wants a PTX version flag.
static __device__ inline float shfl_down(float v, int delta) {
  float r;
  asm volatile("shfl.sync.down.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(delta));
  return r;
}

// The parameter gradient's partial sums. Block (g*cin + i, c) of
// REDUCE_THREADS threads sums, over the positions q = (s, y, x) in
// [c*chunk, (c+1)*chunk) of the n*side*side, for each output channel o of
// g*CONV_PO on, the nine products gout[s,o,y,x] * in[s,i,y+ky-1,x+kx-1]
// (and, for i = 0, gout[s,o,y,x] itself, the bias's), and writes them to
// partial[c*plen + index], index in the parameters' layout,
// plen = cout*cin*9 + cout. A thread walks its positions REDUCE_THREADS
// apart, stepping (s, y, x) without dividing; warps reduce with shuffles,
// then the block through shared memory. n*side*side must be under 2^31.
extern "C" __global__ void conv3x3_backward_params_partial(const float *gout, const float *in,
                                                           float *partial, int n, int cin,
                                                           int cout, int side, int chunk) {
  __shared__ float red[CONV_PO * 10][REDUCE_THREADS / 32];
  int tid = __nvvm_read_ptx_sreg_tid_x();
  int pair = __nvvm_read_ptx_sreg_ctaid_x();
  int c = __nvvm_read_ptx_sreg_ctaid_y();
  int o0 = pair / cin * CONV_PO, i = pair % cin;
  int og = cout - o0 < CONV_PO ? cout - o0 : CONV_PO;
  int area = side * side;
  int positions = n * area;
  int start = c * chunk;
  int end = chunk < positions - start ? start + chunk : positions;
  float acc[CONV_PO][10];
#pragma unroll
  for (int ob = 0; ob < CONV_PO; ob++)
#pragma unroll
    for (int k = 0; k < 10; k++) acc[ob][k] = 0.0f;
  int q = start + tid;
  int s = q / area, r = q - s * area;
  int y = r / side, x = r - y * side;
  int dy = REDUCE_THREADS / side, dx = REDUCE_THREADS - dy * side;
  for (; q < end; q += REDUCE_THREADS) {
    const float *plane = in + ((long long)s * cin + i) * area;
    float v[9];
#pragma unroll
    for (int ky = 0; ky < 3; ky++) {
      int yy = y + ky - 1;
      bool rowIn = yy >= 0 && yy < side;
#pragma unroll
      for (int kx = 0; kx < 3; kx++) {
        int xx = x + kx - 1;
        v[ky * 3 + kx] = rowIn && xx >= 0 && xx < side ? plane[yy * side + xx] : 0.0f;
      }
    }
    const float *g = gout + ((long long)s * cout + o0) * area + y * side + x;
#pragma unroll
    for (int ob = 0; ob < CONV_PO; ob++) {
      if (ob < og) {
        float d = g[(long long)ob * area];
#pragma unroll
        for (int k = 0; k < 9; k++) acc[ob][k] += d * v[k];
        acc[ob][9] += d;
      }
    }
    x += dx;
    y += dy;
    if (x >= side) {
      x -= side;
      y++;
    }
    while (y >= side) {
      y -= side;
      s++;
    }
  }
  int lane = tid & 31, warp = tid >> 5;
#pragma unroll
  for (int ob = 0; ob < CONV_PO; ob++)
#pragma unroll
    for (int k = 0; k < 10; k++) {
      float a = acc[ob][k];
      for (int d = 16; d > 0; d >>= 1) a += shfl_down(a, d);
      if (lane == 0) red[ob * 10 + k][warp] = a;
    }
  __syncthreads();
  if (tid >= CONV_PO * 10) return;
  int ob = tid / 10, k = tid % 10;
  if (ob >= og) return;
  float sum = 0.0f;
  for (int wi = 0; wi < REDUCE_THREADS / 32; wi++) sum += red[tid][wi];
  long long plen = (long long)cout * cin * 9 + cout;
  int o = o0 + ob;
  if (k < 9)
    partial[c * plen + ((long long)o * cin + i) * 9 + k] = sum;
  else if (i == 0)
    partial[c * plen + (long long)cout * cin * 9 + o] = sum;
}

// grad[j] = sum over c < chunks of partial[c*plen + j]. One thread per
// parameter.
extern "C" __global__ void params_reduce(const float *partial, float *grad, int plen, int chunks) {
  long long j = thread_index();
  if (j >= plen) return;
  float sum = 0.0f;
  for (int c = 0; c < chunks; c++) sum += partial[(long long)c * plen + j];
  grad[j] = sum;
}

// g[j] = 0 where y[j] <= 0 (the gradient through a ReLU whose output is y),
// in place. One thread per element.
extern "C" __global__ void relu_backward(float *g, const float *y, int count) {
  long long j = thread_index();
  if (j >= count) return;
  if (!(y[j] > 0.0f)) g[j] = 0.0f;
}

// The index within a side*side plane of the maximum of the 2x2 window of
// output (y, x): the first in row-major order on ties, as PyTorch scans.
static __device__ inline int pool_arg(const float *plane, int side, int y, int x) {
  int best = 2 * y * side + 2 * x;
  int cand[3] = {best + 1, best + side, best + side + 1};
  for (int k = 0; k < 3; k++)
    if (plane[cand[k]] > plane[best]) best = cand[k];
  return best;
}

// MaxPool2d(2) of planes planes of side*side (side even). One thread per
// output element.
extern "C" __global__ void maxpool2_forward(const float *in, float *out, int planes, int side) {
  long long t = thread_index();
  int h = side / 2;
  long long harea = (long long)h * h;
  if (t >= planes * harea) return;
  long long pl = t / harea;
  int r = (int)(t % harea);
  const float *plane = in + pl * side * side;
  out[t] = plane[pool_arg(plane, side, r / h, r % h)];
}

// The gradient through MaxPool2d(2): gin[j] = gout[window of j] where j is
// its window's maximum, else 0 (the argmax is recomputed from in). One
// thread per input element, so every element of gin is written.
extern "C" __global__ void maxpool2_backward(const float *in, const float *gout, float *gin,
                                             int planes, int side) {
  long long t = thread_index();
  long long area = (long long)side * side;
  if (t >= planes * area) return;
  long long pl = t / area;
  int r = (int)(t % area);
  int y = r / side / 2, x = r % side / 2, h = side / 2;
  const float *plane = in + pl * area;
  gin[t] = pool_arg(plane, side, y, x) == r ? gout[(pl * h + y) * h + x] : 0.0f;
}

// Cross-entropy of n samples of classes logits against int32 labels: one
// block of REDUCE_THREADS threads, thread tid taking samples tid,
// tid+REDUCE_THREADS, ... It writes glogits = (softmax - onehot)/n and
// loss[0] = the mean of -log softmax[label]; a label outside [0, classes)
// makes the loss NaN.
extern "C" __global__ void softmax_cross_entropy(const float *logits, const int *labels,
                                                 float *glogits, float *loss, int n,
                                                 int classes) {
  __shared__ float red[REDUCE_THREADS];
  const float log2e = 1.4426950408889634f, ln2 = 0.6931471805599453f;
  int tid = __nvvm_read_ptx_sreg_tid_x();
  float total = 0.0f;
  for (int s = tid; s < n; s += REDUCE_THREADS) {
    const float *z = logits + (long long)s * classes;
    float *g = glogits + (long long)s * classes;
    int label = labels[s];
    float m = z[0];
    for (int k = 1; k < classes; k++) m = z[k] > m ? z[k] : m;
    float sum = 0.0f;
    for (int k = 0; k < classes; k++) sum += __nvvm_ex2_approx_f((z[k] - m) * log2e);
    float lse = m + __nvvm_lg2_approx_f(sum) * ln2;
    for (int k = 0; k < classes; k++)
      g[k] = (__nvvm_ex2_approx_f((z[k] - lse) * log2e) - (k == label ? 1.0f : 0.0f)) / n;
    if (label < 0 || label >= classes)
      total += __builtin_nanf("");
    else
      total += lse - z[label];
  }
  red[tid] = total;
  __syncthreads();
  for (int stride = REDUCE_THREADS / 2; stride > 0; stride >>= 1) {
    if (tid < stride) red[tid] += red[tid + stride];
    __syncthreads();
  }
  if (tid == 0) loss[0] = red[0] / n;
}

// torch.optim.SGD with momentum: v = mu*v + g; p -= lr*v. One thread per
// parameter.
extern "C" __global__ void sgd_momentum(float *p, float *v, const float *g, int count, float lr,
                                        float mu) {
  long long j = thread_index();
  if (j >= count) return;
  float vj = mu * v[j] + g[j];
  v[j] = vj;
  p[j] -= lr * vj;
}

// Multiply and add rounded once each: PTX's mul.rn and add.rn, which
// neither LLVM nor ptxas fuse into a multiply-add (plain a*b + c may be).
static __device__ inline float mul_rn(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
static __device__ inline float add_rn(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// ConvertColor then Scale of n uint8 samples of 3 planes (R, G, B) of
// plane pixels into float32 planes (Y, Cb, Cr): out_c = ((a_c0*R + a_c1*G)
// + a_c2*B) + b_c, rounded at each operation as transforms.ConvertScale
// does (no fused multiply-add), with a = ColorMatrix/255 and
// b = ColorOffset/255 in float32. One thread per pixel.
extern "C" __global__ void convert_scale(const unsigned char *src, float *dst, int n, int plane,
                                         float a00, float a01, float a02, float a10, float a11,
                                         float a12, float a20, float a21, float a22, float b0,
                                         float b1, float b2) {
  long long t = thread_index();
  if (t >= (long long)n * plane) return;
  long long s = t / plane, px = t % plane;
  const unsigned char *in = src + s * 3 * plane + px;
  float *out = dst + s * 3 * plane + px;
  float r = in[0], g = in[plane], b = in[2 * plane];
  out[0] = add_rn(add_rn(add_rn(mul_rn(a00, r), mul_rn(a01, g)), mul_rn(a02, b)), b0);
  out[plane] = add_rn(add_rn(add_rn(mul_rn(a10, r), mul_rn(a11, g)), mul_rn(a12, b)), b1);
  out[2 * plane] = add_rn(add_rn(add_rn(mul_rn(a20, r), mul_rn(a21, g)), mul_rn(a22, b)), b2);
}
