"""Time PIL's JPEG decoding (libjpeg-turbo) on a headspace dataset's files.

    /usr/bin/python3 peers/torch/pil_decode.py DIR [ROUNDS]

DIR is a dataset written by `headspace dataset write --format jpeg --layout
files`: every *.jpg in it is read into memory once, then decoded ROUNDS
times (default 30) as peers/torch/ondisk.py decodes a sample:
Image.open(BytesIO(data)).convert("RGB"), forcing the pixels. It prints the
median over rounds of the wall and the CPU time per image, the figures to set beside
`go test ./datasets/ondisk -bench DecodeJPEG` with HEADSPACE_JPEG_DIR=DIR.
Standard library and PIL only.
"""

import glob
import io
import os
import statistics
import sys
import time

from PIL import Image, features


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: pil_decode.py DIR [ROUNDS]")
    root = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) == 3 else 30
    names = sorted(glob.glob(os.path.join(root, "*.jpg")))
    if not names:
        sys.exit(f"pil_decode.py: {root}: no .jpg files")
    blobs = []
    for n in names:
        with open(n, "rb") as f:
            blobs.append(f.read())
    wall, cpu = [], []
    for _ in range(rounds):
        start, cstart = time.perf_counter(), time.process_time()
        for data in blobs:
            img = Image.open(io.BytesIO(data)).convert("RGB")
            img.load()
        wall.append((time.perf_counter() - start) / len(blobs))
        cpu.append((time.process_time() - cstart) / len(blobs))
    ver = features.version("libjpeg_turbo") or "unknown"
    print(f"PIL {Image.__version__} (libjpeg-turbo {ver}): {len(blobs)} images, {rounds} rounds: "
          f"median {statistics.median(wall) * 1e3:.2f} ms/image wall, {statistics.median(cpu) * 1e3:.2f} ms/image CPU")


if __name__ == "__main__":
    main()
