// emulate runs transforms.cu's kernels on the host, as the launches of
// kernels.DeviceTransform make them (256 threads a block), for
// TestTransformKernelsOnHost. It reads from stdin eight little-endian
// int64s (n, crop, width, height, device_crop, thresh, sample_bytes,
// threads) and then n*sample_bytes bytes of samples, and writes to stdout
// the masked crops, n*3*crop*crop bytes.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hostshim.h"
#include "../transforms.cu"

int main() {
  long long h[8];
  if (fread(h, sizeof h, 1, stdin) != 1) return 2;
  int n = (int)h[0], crop = (int)h[1], width = (int)h[2], height = (int)h[3];
  int device_crop = (int)h[4];
  unsigned long long thresh = (unsigned long long)h[5];
  int sample_bytes = (int)h[6];
  unsigned threads = (unsigned)h[7];
  std::vector<unsigned char> src((size_t)n * sample_bytes), mask((size_t)n * crop * crop),
      dst((size_t)n * 3 * crop * crop);
  if (fread(src.data(), 1, src.size(), stdin) != src.size()) return 2;
  long long pairs = (long long)n * crop * crop / 2, pixels = (long long)n * crop * crop;
  hs_launch((unsigned)((pairs + threads - 1) / threads), threads, [&] {
    transform_mask(src.data(), sample_bytes, mask.data(), n, crop, thresh);
  });
  hs_launch((unsigned)((pixels + threads - 1) / threads), threads, [&] {
    transform_crop(src.data(), sample_bytes, width, height, mask.data(), dst.data(), n, crop,
                   device_crop);
  });
  if (fwrite(dst.data(), 1, dst.size(), stdout) != dst.size()) return 3;
  return 0;
}
