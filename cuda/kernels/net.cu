// The CUDA kernels of document 003's Net, float32, NCHW. Compiled to PTX
// without a CUDA toolkit by `make ptx` (clang -x cuda --cuda-device-only
// -nocudainc -nocudalib), so the CUDA qualifiers are spelled as clang's
// attributes and the thread indices read from the NVVM special registers.
// There is no libdevice either: exp and log are ex2.approx and lg2.approx.
//
// Straightforward on purpose: one thread per output element for the forward
// passes and the data gradients; the parameter gradients split their
// batch×height×width sum across blocks (partial sums, then a second kernel).
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

// out[s,o,y,x] = p[bias o] + sum over i, ky, kx of in[s,i,y+ky-1,x+kx-1] * p[o,i,ky,kx]
// (zero padding), then max(0, .) if relu. p holds cout*cin*9 weights then
// cout biases. One thread per output element.
extern "C" __global__ void conv3x3_forward(const float *in, const float *p, float *out,
                                           int n, int cin, int cout, int side, int relu) {
  long long t = thread_index();
  long long area = (long long)side * side;
  if (t >= (long long)n * cout * area) return;
  int x = (int)(t % side), y = (int)((t / side) % side);
  int o = (int)((t / area) % cout);
  long long s = t / (area * cout);
  float sum = p[cout * cin * 9 + o];
  for (int i = 0; i < cin; i++) {
    const float *plane = in + (s * cin + i) * area;
    const float *w = p + (o * cin + i) * 9;
    for (int ky = 0; ky < 3; ky++) {
      int yy = y + ky - 1;
      if (yy < 0 || yy >= side) continue;
      for (int kx = 0; kx < 3; kx++) {
        int xx = x + kx - 1;
        if (xx < 0 || xx >= side) continue;
        sum += plane[yy * side + xx] * w[ky * 3 + kx];
      }
    }
  }
  if (relu && sum < 0.0f) sum = 0.0f;
  out[t] = sum;
}

// gin[s,i,y,x] = sum over o, ky, kx of gout[s,o,y-ky+1,x-kx+1] * p[o,i,ky,kx].
// One thread per input element.
extern "C" __global__ void conv3x3_backward_data(const float *gout, const float *p, float *gin,
                                                 int n, int cin, int cout, int side) {
  long long t = thread_index();
  long long area = (long long)side * side;
  if (t >= (long long)n * cin * area) return;
  int x = (int)(t % side), y = (int)((t / side) % side);
  int i = (int)((t / area) % cin);
  long long s = t / (area * cin);
  float sum = 0.0f;
  for (int o = 0; o < cout; o++) {
    const float *plane = gout + (s * cout + o) * area;
    const float *w = p + (o * cin + i) * 9;
    for (int ky = 0; ky < 3; ky++) {
      int yy = y - ky + 1;
      if (yy < 0 || yy >= side) continue;
      for (int kx = 0; kx < 3; kx++) {
        int xx = x - kx + 1;
        if (xx < 0 || xx >= side) continue;
        sum += plane[yy * side + xx] * w[ky * 3 + kx];
      }
    }
  }
  gin[t] = sum;
}

// The parameter gradient's partial sums. Block (o*cin + i, c) of
// REDUCE_THREADS threads sums, over the positions q = (s, y, x) in
// [c*chunk, (c+1)*chunk) of the n*side*side, the nine products
// gout[s,o,y,x] * in[s,i,y+ky-1,x+kx-1] (and, for i = 0, gout[s,o,y,x]
// itself, the bias's), and writes them to partial[c*plen + index], index in
// the parameters' layout, plen = cout*cin*9 + cout.
extern "C" __global__ void conv3x3_backward_params_partial(const float *gout, const float *in,
                                                           float *partial, int n, int cin,
                                                           int cout, int side, int chunk) {
  __shared__ float red[10][REDUCE_THREADS];
  int tid = __nvvm_read_ptx_sreg_tid_x();
  int pair = __nvvm_read_ptx_sreg_ctaid_x();
  int c = __nvvm_read_ptx_sreg_ctaid_y();
  int o = pair / cin, i = pair % cin;
  long long area = (long long)side * side;
  long long positions = n * area;
  long long start = (long long)c * chunk;
  long long end = start + chunk < positions ? start + chunk : positions;
  float acc[10];
  for (int k = 0; k < 10; k++) acc[k] = 0.0f;
  for (long long q = start + tid; q < end; q += REDUCE_THREADS) {
    long long s = q / area;
    int r = (int)(q % area);
    int y = r / side, x = r % side;
    float d = gout[(s * cout + o) * area + r];
    const float *plane = in + (s * cin + i) * area;
    for (int ky = 0; ky < 3; ky++) {
      int yy = y + ky - 1;
      if (yy < 0 || yy >= side) continue;
      for (int kx = 0; kx < 3; kx++) {
        int xx = x + kx - 1;
        if (xx < 0 || xx >= side) continue;
        acc[ky * 3 + kx] += d * plane[yy * side + xx];
      }
    }
    acc[9] += d;
  }
  for (int k = 0; k < 10; k++) red[k][tid] = acc[k];
  __syncthreads();
  for (int stride = REDUCE_THREADS / 2; stride > 0; stride >>= 1) {
    if (tid < stride)
      for (int k = 0; k < 10; k++) red[k][tid] += red[k][tid + stride];
    __syncthreads();
  }
  long long plen = (long long)cout * cin * 9 + cout;
  if (tid < 9)
    partial[c * plen + (o * cin + i) * 9 + tid] = red[tid][0];
  else if (tid == 9 && i == 0)
    partial[c * plen + (long long)cout * cin * 9 + o] = red[9][0];
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
