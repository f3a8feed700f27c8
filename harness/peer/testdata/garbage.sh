#!/bin/sh
# Exits 0 but prints a benchmark line that is not the peer's.
echo "torch: 0.0.0-fake"
echo "BenchmarkOther/workers=1 2 5 ns/op"
