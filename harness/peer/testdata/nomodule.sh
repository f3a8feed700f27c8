#!/bin/sh
# Fails as python3 does when torch is not installed.
echo "Traceback (most recent call last):" >&2
echo '  File "dataloader.py", line 44, in <module>' >&2
echo "    import torch" >&2
echo "ModuleNotFoundError: No module named 'torch'" >&2
exit 1
