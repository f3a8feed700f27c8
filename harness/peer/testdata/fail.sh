#!/bin/sh
# Fails as a Python script does: a traceback on stderr, exit status 1.
echo "python: 3.0.0-fake"
echo "Traceback (most recent call last):" >&2
echo '  File "dataloader.py", line 1, in <module>' >&2
echo "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed." >&2
exit 1
