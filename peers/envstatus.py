"""Writes, as JSON on stdout, which pinned peer packages import in this env.

Run by ci/peers-env.sh with the env's python: argv[1] is
peers/requirements.txt, argv[2] the folder of per-package install logs. Each
package is imported in its own process (a crash or a hang in one, DALI
without a GPU say, is that package's reason, not the script's end) and the
record is {"package", "import", "version", "ok", "reason"}: the version pip
installed, or the one-line reason it is unavailable.
"""
import importlib.metadata
import json
import os
import platform
import subprocess
import sys

# The module each distribution is imported as; the peers import these.
# A value with a ";" is the statement that proves it loads (SPDL's FFmpeg
# bindings load on first use: Debian's FFmpeg libraries, `make peers-env`).
IMPORTS = {
    "torch": "torch",
    "torchvision": "torchvision",
    "numpy": "numpy",
    "pillow": "PIL.Image",
    "spdl": "spdl.io.lib; spdl.io.lib._import_libspdl()",
    "torchdata": "torchdata.nodes",
    "nvidia-dali-cuda120": "nvidia.dali.fn",
    "tensorflow-cpu": "tensorflow",
    "s3torchconnector": "s3torchconnector",
    "mosaicml-streaming": "streaming",
    "litdata": "litdata",
    "lightning": "lightning",
    "transformers": "transformers",
    "accelerate": "accelerate",
    "timm": "timm",
}


def one_line(text, first_error=False):
    """One meaningful line of an error output, at most 240 characters: a
    traceback's last line (the exception), or with first_error pip's first
    "ERROR:" line (the cause; the later ones are hints)."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if first_error:
        for l in lines:
            if l.startswith("ERROR:"):
                return l[:240]
    for l in reversed(lines):
        if "Error" in l or "error" in l:
            return l[:240]
    return (lines[-1] if lines else "no output")[:240]


def status(dist, pin, logs):
    stmt = IMPORTS.get(dist, dist.replace("-", "_"))
    module = stmt.split(";")[0]
    rec = {"package": dist, "import": module, "pin": pin, "version": "", "ok": False, "reason": ""}
    try:
        rec["version"] = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        log = os.path.join(logs, dist + ".log")
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        rec["reason"] = "not installed: " + one_line(text, first_error=True)
        return rec
    try:
        p = subprocess.run([sys.executable, "-c", "import " + stmt],
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        rec["reason"] = "import %s hung for 300 s" % module
        return rec
    if p.returncode != 0:
        rec["reason"] = "import %s failed (exit %d): %s" % (module, p.returncode, one_line(p.stderr))
        return rec
    rec["ok"] = True
    return rec


def main():
    req, logs = sys.argv[1], sys.argv[2]
    pins = []
    for line in open(req):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins.append((name.strip().lower(), version.strip()))
    out = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": [status(d, v, logs) for d, v in pins],
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
