// The device transform (--transforms device): the mask, its 4-neighbour
// dilation and the random crop of the document's pipeline as CUDA kernels on
// the uint8 batch, making exactly the random draws of the Go fast transform
// (datasets/transforms), so the device's masked crop is fast's ApplyUint8
// bit for bit; net.cu's convert_scale then does ConvertColor and Scale.
//
// Each sample of the uploaded batch is a transforms.DeviceApplier sample:
// a 16-byte header (the random state after the crop's draws, uint64
// little-endian; the crop's top and left, uint32 little-endian each) and
// then either the unmasked crop (crop*crop*3 RGB bytes) or the whole raw
// image (width*height*3 bytes, --device-crop).
//
// The random source is wyrand (datasets/prng): its k-th draw from a state
// is a function of state+(k+1)*C alone, so each thread makes its own draw.
//
// Compiled to PTX by `make ptx` (clang, no CUDA toolkit); compiled as C++
// on the host by TestTransformKernelsOnHost with testdata/hostshim.h,
// which defines HEADSPACE_HOST and runs each grid thread by thread, so the
// kernels' arithmetic is tested without a GPU. Hence the thread indices
// and the 64-bit high multiply are macros.
#ifndef HEADSPACE_HOST
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define TID_X() __nvvm_read_ptx_sreg_tid_x()
#define CTAID_X() __nvvm_read_ptx_sreg_ctaid_x()
#define NTID_X() __nvvm_read_ptx_sreg_ntid_x()
#define MULHI64(a, b) __nvvm_mulhi_ull(a, b)
#endif

#define DEVICE_HEADER 16

static __device__ inline long long transform_thread() {
  return (long long)CTAID_X() * NTID_X() + TID_X();
}

// The little-endian unsigned integer of bytes p[0..n).
static __device__ inline unsigned long long read_le(const unsigned char *p, int n) {
  unsigned long long v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

// wyrand's k-th draw (from 0) after state: prng.At.
static __device__ inline unsigned long long wyrand_at(unsigned long long state,
                                                     unsigned long long k) {
  unsigned long long s = state + (k + 1) * 0xa0761d6478bd642full;
  unsigned long long t = s ^ 0xe7037ed1a0b428dbull;
  return MULHI64(s, t) ^ (s * t);
}

// The mask of n samples, before dilation: mask[s][p] = 1 where pixel p
// (row-major, of crop*crop) is masked. Pixels 2k and 2k+1 come from draw k
// u: uint32(u) < thresh and (u >> 32) < thresh, as the fast transform draws
// them (thresh is transforms.MaskThreshold, at most 2^32). One thread per
// pair of pixels.
extern "C" __global__ void transform_mask(const unsigned char *src, int sample_bytes,
                                          unsigned char *mask, int n, int crop,
                                          unsigned long long thresh) {
  long long t = transform_thread();
  long long pairs = (long long)crop * crop / 2;
  if (t >= n * pairs) return;
  long long s = t / pairs, k = t % pairs;
  unsigned long long state = read_le(src + s * sample_bytes, 8);
  unsigned long long u = wyrand_at(state, (unsigned long long)k);
  unsigned char *m = mask + s * 2 * pairs + 2 * k;
  m[0] = (unsigned long long)(unsigned int)u < thresh;
  m[1] = (u >> 32) < thresh;
}

// The masked crop of n samples as 3 planes (R, G, B) of crop*crop uint8:
// pixel (y, x) is 0 in every plane where the mask is set at it or at one of
// its 4 neighbours (zero outside the crop), the raw pixel otherwise. The
// samples hold images of width*height; with device_crop the crop starts at
// the header's (top, left), else the sample is the crop itself (width and
// height are crop). One thread per output pixel.
extern "C" __global__ void transform_crop(const unsigned char *src, int sample_bytes, int width,
                                          int height, const unsigned char *mask,
                                          unsigned char *dst, int n, int crop, int device_crop) {
  long long t = transform_thread();
  long long plane = (long long)crop * crop;
  if (t >= n * plane) return;
  long long s = t / plane, p = t % plane;
  int y = (int)(p / crop), x = (int)(p % crop);
  const unsigned char *sample = src + s * sample_bytes;
  long long top = 0, left = 0;
  if (device_crop) {
    top = (long long)read_le(sample + 8, 4);
    left = (long long)read_le(sample + 12, 4);
  }
  const unsigned char *m = mask + s * plane;
  int masked = m[p];
  if (y > 0) masked |= m[p - crop];
  if (y + 1 < crop) masked |= m[p + crop];
  if (x > 0) masked |= m[p - 1];
  if (x + 1 < crop) masked |= m[p + 1];
  const unsigned char *px = sample + DEVICE_HEADER + ((top + y) * width + left + x) * 3;
  unsigned char *out = dst + s * 3 * plane + p;
  out[0] = masked ? 0 : px[0];
  out[plane] = masked ? 0 : px[1];
  out[2 * plane] = masked ? 0 : px[2];
  (void)height;
}
