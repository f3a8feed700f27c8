"""headspace_hook: headspace's hook in a user's PyTorch training script.

headspace runs a training command the way ``python -m cProfile`` does::

    INTERPRETER [OPTIONS] -m headspace_hook SCRIPT [ARGS...]
    INTERPRETER [OPTIONS] -m headspace_hook -m MODULE [ARGS...]

with this file's directory on PYTHONPATH (a temporary directory headspace
writes and removes; nothing goes into the user's tree). The settings come
from the environment variable HEADSPACE_HOOK (JSON); events go, one JSON
object a line, to the file descriptor named by HEADSPACE_HOOK_FD.

The hook wraps the training torch.utils.data.DataLoader (by default the
first one iterated in the main process) in SPDL's cache iterator: the
first ``num_caches`` batches are kept, ``return_caches_after`` batches come
from the loader as they are, then the kept batches are replayed for
``steps_after`` steps. It times every step, batch request to batch request,
and the loop's wait for each batch. In the workers it times each sample's
``__getitem__`` (split into ``.loader`` and ``.transform`` for torchvision-
style datasets), the collate of each batch and the workers' CPU time. Once
it has the steps it needs it says so, and headspace stops the command and
its workers.

Public API, for loops that do not iterate a DataLoader (any iterable, as
SPDL's cache_iterator takes)::

    try:
        import headspace_hook
        batches = headspace_hook.wrap(batches)   # measured under headspace
    except ImportError:
        pass                                      # not run by headspace

``wrap`` returns the iterable unchanged when the script does not run under
headspace, and ``cache_iterator`` is SPDL's cache_iterator on its own.

Standard library only: torch is the script's own.
"""

import json
import os
import sys
import threading
import time

__all__ = ["wrap", "cache_iterator"]

_perf = time.perf_counter_ns

# Exit statuses the hook uses; headspace maps them to one line and exit 2.
EXIT_REFUSED = 3


def cache_iterator(src, num_caches, return_caches_after=None, stop_after=None):
    """SPDL's cache_iterator: yield the first return_caches_after items of
    src (keeping the first num_caches), then replay the kept ones in order,
    cycling; stop after stop_after items in all (None: never)."""
    if num_caches < 1:
        raise ValueError("num_caches %d must be at least 1" % num_caches)
    if return_caches_after is None:
        return_caches_after = num_caches
    if return_caches_after < num_caches:
        raise ValueError("return_caches_after %d is less than num_caches %d" % (return_caches_after, num_caches))
    if stop_after is not None and stop_after < return_caches_after:
        raise ValueError("stop_after %d is less than return_caches_after %d" % (stop_after, return_caches_after))
    caches = []
    n = 0
    for item in src:
        if len(caches) < num_caches:
            caches.append(item)
        yield item
        n += 1
        if n >= return_caches_after or (stop_after is not None and n >= stop_after):
            break
    del src
    if not caches:
        return
    i = 0
    while stop_after is None or n < stop_after:
        yield caches[i]
        i = (i + 1) % len(caches)
        n += 1


class _Reporter:
    """Writes events, one JSON line each, to headspace's descriptor. Lines
    under PIPE_BUF are written whole, so workers' lines never interleave."""

    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()

    def send(self, obj):
        self.raw(json.dumps(obj, separators=(",", ":")) + "\n")

    def raw(self, line):
        if self.fd is None:
            return
        data = line.encode()
        try:
            with self.lock:
                os.write(self.fd, data)
        except OSError:
            # headspace is gone (or a spawned worker without the pipe):
            # a worker stops reporting; the main process stops.
            self.fd = None
            if os.getpid() == _MAIN_PID:
                os._exit(EXIT_REFUSED)


_MAIN_PID = os.getpid()
_settings = {}
_reporter = _Reporter(None)


class _State:
    """The measurement of the training loop, across its epochs."""

    def __init__(self, cfg):
        self.mode = cfg.get("mode", "analyze")
        self.level = cfg.get("level", "none")
        if self.mode == "ladder":
            warm = max(1, int(cfg.get("warmup", 0)))
            self.num_caches = 1
            self.switch = 1 if self.level == "host" else 0
            self.total = warm + int(cfg.get("steps", 10))
            self.caching = self.level == "host"
        else:
            self.num_caches = int(cfg.get("num_caches", 10))
            self.switch = int(cfg.get("return_caches_after", 100))
            self.total = self.switch + int(cfg.get("steps_after", 100))
            self.caching = True
        self.caches = []
        self.batches = 0          # batches handed to the loop
        self.last_call = None     # when the loop asked for the last batch
        self.last_wait = 0
        self.last_phase = ""
        self.boundary = False     # the step in progress spans an epoch's end or another loader
        self.done = False


_state = None
_claimed = False       # the training loop is chosen (a DataLoader or wrap())
_loaders = {}          # id(DataLoader) -> its number, in order of first iteration
_stage = {"getitem": 0, "samples": 0, "load": 0, "transform": 0, "getitem_cpu": 0, "load_cpu": 0, "transform_cpu": 0}
_cpu = time.thread_time_ns


def _runq():
    """This thread's time waiting for a core so far (Linux schedstat), -1
    where it cannot be read."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _finish():
    """The loop has its steps: say so, and wait for headspace to stop the
    command (its process group); alone, leave."""
    _reporter.send({"ev": "done"})
    time.sleep(30)
    os._exit(0)


class _Timed:
    """The cache iterator over one epoch of the training loop's source,
    timing each step: the time from one batch request to the next, and the
    wait inside each request."""

    def __init__(self, make_src, st, length=None):
        self.make_src = make_src
        self.src = None
        self.st = st
        self.length = length  # an epoch's batches, cached ones counted (CacheDataLoader's)
        self.n = 0

    def __iter__(self):
        return self

    def __next__(self):
        st = self.st
        t0 = _perf()
        if st.last_call is not None:
            phase = "epoch" if st.boundary else st.last_phase
            if st.boundary and st.mode == "ladder":
                st.total += 1  # the ladder times its steps whole: this one is left out
            _reporter.raw('{"ev":"step","i":%d,"ns":%d,"wait":%d,"ph":"%s"}\n'
                          % (st.batches - 1, t0 - st.last_call, st.last_wait, phase))
            st.boundary = False
        if st.batches >= st.total:
            st.done = True
            _reporter.send({"ev": "cpu", "at": st.batches, "ns": time.process_time_ns()})
            _finish()
        if st.batches == st.switch and st.caching:
            _reporter.send({"ev": "cpu", "at": st.batches, "ns": time.process_time_ns()})
        if st.caching and st.batches >= st.switch and st.caches:
            if self.length is not None and self.n >= self.length:
                st.boundary = True  # the epoch ends, as CacheDataLoader's does
                st.last_call = None
                raise StopIteration
            batch = st.caches[(st.batches - st.switch) % len(st.caches)]
            phase = "cached"
        else:
            if self.src is None:
                self.src = iter(self.make_src())
            try:
                batch = next(self.src)
            except StopIteration:
                st.boundary = True
                st.last_call = None
                raise
            if st.caching and len(st.caches) < st.num_caches:
                st.caches.append(batch)
            phase = "loader"
            if st.caching and st.batches + 1 >= st.switch and st.caches:
                self.src = None  # SPDL drops the source at the switch
        t1 = _perf()
        if st.batches == 0:
            _reporter.send({"ev": "first", "wait": t1 - t0})
        st.last_call, st.last_wait, st.last_phase = t0, t1 - t0, phase
        st.batches += 1
        self.n += 1
        return batch


def wrap(iterable, name=None):
    """The training loop's batches, measured: under headspace, iterable in
    the cache iterator, timed step by step; otherwise iterable itself.
    The first wrap (or DataLoader, whichever is iterated first) is the
    training loop."""
    global _claimed, _state
    if _reporter.fd is None or _claimed:
        return iterable
    _claimed = True
    if _state is None:
        _state = _State(_settings)
    _reporter.send({"ev": "loader", "index": len(_loaders) + 1, "site": name or _site(), "kind": type(iterable).__name__, "target": True})
    _loaders[id(iterable)] = len(_loaders) + 1
    try:
        length = len(iterable)
    except TypeError:
        length = None
    return _Timed(lambda: iterable, _state, length)


def _site():
    """file:line of the user's frame that called into the hook."""
    f = sys._getframe(1)
    here = os.path.abspath(__file__)
    while f is not None:
        fn = f.f_code.co_filename
        if os.path.abspath(fn) != here and "torch" + os.sep + "utils" + os.sep + "data" not in fn:
            return "%s:%d" % (os.path.basename(fn), f.f_lineno)
        f = f.f_back
    return "?"


def _fork_workers(dl):
    """Whether dl's workers (if any) are forked: only then do they share
    the hook's pipe and may the dataset's class be replaced in place (a
    spawned worker pickles the dataset)."""
    if dl.num_workers == 0:
        return True
    import multiprocessing
    ctx = dl.multiprocessing_context
    if ctx is None:
        method = multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_context().get_start_method()
    elif isinstance(ctx, str):
        method = ctx
    else:
        method = ctx.get_start_method()
    return method == "fork"


def _timer(fn, key):
    ckey = key + "_cpu"

    def timed(*a, **kw):
        t, c = _perf(), _cpu()
        r = fn(*a, **kw)
        _stage[ckey] += _cpu() - c
        _stage[key] += _perf() - t
        return r
    timed.__wrapped__ = fn
    return timed


def _first_only(fn):
    """fn computed once per process; its first result returned ever after
    (the ladder's caches of one sample)."""
    kept = []

    def cached(*a, **kw):
        if not kept:
            kept.append(fn(*a, **kw))
        return kept[0]
    cached.__wrapped__ = fn
    return cached


def _instrument(dl, level):
    """Times dl's dataset and collate in the processes that run them, and
    applies a ladder level below host: sample (the dataset returns one
    cached processed sample) or raw (its .loader returns one cached
    loaded item, the transform still applied). Returns what it measures."""
    ds = dl.dataset
    measured = {"getitem": False, "split": False, "collate": False, "iterable": False}
    if not _fork_workers(dl):
        if level in ("sample", "raw"):
            _refuse("level %s needs forked DataLoader workers (multiprocessing start method fork) or num_workers=0" % level)
        return measured
    cls = type(ds)
    iterable = False
    try:
        from torch.utils.data import IterableDataset
        iterable = isinstance(ds, IterableDataset)
    except ImportError:
        pass
    if getattr(cls, "_headspace_timed", False):
        pass
    elif iterable:
        if level == "sample":
            _refuse("level sample needs a map-style dataset (one with __getitem__); %s is an IterableDataset" % cls.__name__)
        orig_iter = cls.__iter__

        def timed_iter(self, _orig=orig_iter):
            it = iter(_orig(self))
            while True:
                t, c = _perf(), _cpu()
                try:
                    x = next(it)
                except StopIteration:
                    return
                _stage["getitem_cpu"] += _cpu() - c
                _stage["getitem"] += _perf() - t
                _stage["samples"] += 1
                yield x
        try:
            ds.__class__ = type(cls.__name__, (cls,), {"__iter__": timed_iter, "_headspace_timed": True, "__module__": cls.__module__})
            measured["getitem"] = measured["iterable"] = True
        except TypeError:
            pass
    elif getattr(cls, "__getitem__", None) is not None:
        getitem = cls.__getitem__
        kept = []

        def timed_getitem(self, index, _orig=getitem):
            t, c = _perf(), _cpu()
            if level != "sample":
                r = _orig(self, index)
            else:
                if not kept:
                    kept.append(_orig(self, index))
                r = kept[0]
            _stage["getitem_cpu"] += _cpu() - c
            _stage["getitem"] += _perf() - t
            _stage["samples"] += 1
            return r
        attrs = {"__getitem__": timed_getitem, "_headspace_timed": True, "__module__": cls.__module__}
        getitems = getattr(cls, "__getitems__", None)
        if getitems is not None:
            # torch 2's fetcher asks for a batch's samples at once where
            # the dataset can give them.
            def timed_getitems(self, indices, _orig=getitems):
                if level == "sample":
                    return [timed_getitem(self, i) for i in indices]
                t, c = _perf(), _cpu()
                r = _orig(self, indices)
                _stage["getitem_cpu"] += _cpu() - c
                _stage["getitem"] += _perf() - t
                _stage["samples"] += len(indices)
                return r
            attrs["__getitems__"] = timed_getitems
        try:
            ds.__class__ = type(cls.__name__, (cls,), attrs)
            measured["getitem"] = True
        except TypeError:
            pass
    elif level == "sample":
        _refuse("level sample needs a map-style dataset (one with __getitem__); %s has none" % cls.__name__)
    ld, tf = getattr(ds, "loader", None), getattr(ds, "transform", None)
    if callable(ld):
        if level == "raw":
            ld = _first_only(ld)
        ds.loader = _timer(ld, "load")
        if callable(tf):
            ds.transform = _timer(tf, "transform")
        measured["split"] = True
    elif level == "raw":
        _refuse("level raw needs a torchvision-style dataset with a .loader (ImageFolder, DatasetFolder); %s has none" % cls.__name__)
    collate = dl.collate_fn

    def timed_collate(batch, _orig=collate):
        t, tc = _perf(), _cpu()
        r = _orig(batch)
        c, cc = _perf() - t, _cpu() - tc
        info = _worker_info()
        s = _stage
        _reporter.raw('{"ev":"stage","w":%d,"n":%d,"getitem":%d,"load":%d,"transform":%d,"collate":%d,"cpu":%d,'
                      '"getitem_cpu":%d,"load_cpu":%d,"transform_cpu":%d,"collate_cpu":%d,"runq":%d}\n'
                      % (info.id if info is not None else -1, s["samples"], s["getitem"], s["load"], s["transform"], c, time.process_time_ns(),
                         s["getitem_cpu"], s["load_cpu"], s["transform_cpu"], cc, _runq()))
        for k in s:
            s[k] = 0
        return r
    timed_collate.__wrapped__ = collate
    dl.collate_fn = timed_collate
    measured["collate"] = True
    return measured


_get_worker_info = []


def _worker_info():
    """torch's get_worker_info(), looked up once; None outside a worker or
    without torch."""
    if not _get_worker_info:
        try:
            from torch.utils.data import get_worker_info
        except Exception:
            def get_worker_info():
                return None
        _get_worker_info.append(get_worker_info)
    return _get_worker_info[0]()


def _refuse(msg):
    _reporter.send({"ev": "refuse", "msg": msg})
    sys.stderr.flush()
    os._exit(EXIT_REFUSED)


def _describe(dl):
    ds = dl.dataset
    try:
        n = len(dl)
    except TypeError:
        n = -1
    return {"dataset": type(ds).__name__, "batch_size": dl.batch_size if dl.batch_size is not None else 0,
            "num_workers": dl.num_workers, "pin_memory": bool(dl.pin_memory), "len": n,
            "prefetch_factor": dl.prefetch_factor if dl.num_workers > 0 and dl.prefetch_factor is not None else 0}


def _loader_settings(dl, cfg):
    """headspace tune: dl's loader settings as the script made them,
    returned, then cfg's applied (None: none), the script unchanged:
    num_workers, prefetch_factor (0: torch's default), pin_memory,
    persistent_workers and start_method (multiprocessing_context; "":
    the platform's default)."""
    ctx = dl.multiprocessing_context
    own = {"num_workers": dl.num_workers, "pin_memory": bool(dl.pin_memory),
           "prefetch_factor": (dl.prefetch_factor or 0) if dl.num_workers > 0 else 0,
           "persistent_workers": bool(getattr(dl, "persistent_workers", False)),
           "start_method": "" if ctx is None else ctx if isinstance(ctx, str) else ctx.get_start_method()}
    if not cfg:
        return own
    w = int(cfg.get("num_workers", 0))
    dl.num_workers = w
    dl.pin_memory = bool(cfg.get("pin_memory"))
    # DataLoader refuses persistent_workers once made: set it underneath.
    object.__setattr__(dl, "persistent_workers", bool(cfg.get("persistent_workers")) and w > 0)
    if w > 0:
        dl.prefetch_factor = int(cfg.get("prefetch_factor") or 2)
        dl.multiprocessing_context = cfg.get("start_method") or None
    else:
        dl.multiprocessing_context = None
    return own


def _patch_torch():
    import torch
    import torch.utils.data as tud
    try:
        import torchvision
        tv = torchvision.__version__
    except Exception:
        tv = ""
    cuda = False
    try:
        cuda = bool(torch.cuda.is_available())
    except Exception:
        pass
    _reporter.send({"ev": "start", "python": sys.version.split()[0], "executable": sys.executable,
                    "torch": torch.__version__, "torchvision": tv, "cuda": cuda, "pid": os.getpid()})
    if _settings.get("level") == "device":
        if not cuda:
            _refuse("level device needs a CUDA GPU; torch.cuda.is_available() is False")
        _refuse("level device on a script's own loop is not implemented yet (the script makes its own copy to the GPU)")

    DataLoader = tud.DataLoader
    orig_iter = DataLoader.__iter__
    orig_init = DataLoader.__init__
    want = int(_settings.get("loader", 1))

    def __init__(self, *a, **kw):
        orig_init(self, *a, **kw)
        try:
            object.__setattr__(self, "_headspace_site", _site())
        except Exception:
            pass

    def __iter__(self):
        global _claimed, _state
        if os.getpid() != _MAIN_PID or threading.current_thread() is not threading.main_thread():
            return orig_iter(self)
        num = _loaders.get(id(self))
        if num is None:
            num = len(_loaders) + 1
            _loaders[id(self)] = num
            target = not _claimed and num == want
            ev = {"ev": "loader", "index": num, "site": getattr(self, "_headspace_site", "?"), "kind": "DataLoader", "target": target}
            ev.update(_describe(self))
            if target:
                _claimed = True
                if int(_settings.get("workers", 0)) > 0:
                    # whatif --verify: the worker count it predicts for
                    self.num_workers = int(_settings["workers"])
                    if self.num_workers > 0 and getattr(self, "prefetch_factor", 2) is None:
                        self.prefetch_factor = 2
                    ev["num_workers"] = self.num_workers
                ev["own"] = _loader_settings(self, _settings.get("tune"))
                ev.update(_describe(self))
                _state = _State(_settings)
                if _state.mode == "ladder" and int(_settings.get("warmup", 0)) <= 0:
                    # The batches the workers prefetched while the loop
                    # started come in a burst: the warm-up leaves them out.
                    ahead = self.num_workers * (self.prefetch_factor or 2) if self.num_workers > 0 else 0
                    _state.total = 1 + ahead + int(_settings.get("steps", 10))
                    ev["warmup"] = 1 + ahead
                self._headspace_state = _state
                ev["measured"] = _instrument(self, _settings.get("level", "none"))
                _reporter.send(ev)
            else:
                _reporter.send(ev)
        st = getattr(self, "_headspace_state", None)
        if st is None:
            if _state is not None and _state.last_call is not None:
                _state.boundary = True  # a validation pass inside the training loop
            return orig_iter(self)
        try:
            length = len(self)
        except TypeError:
            length = None
        return _Timed(lambda: orig_iter(self), st, length)

    DataLoader.__init__ = __init__
    DataLoader.__iter__ = __iter__

    # Pin memory runs in the loader's thread of the main process.
    try:
        from torch.utils.data._utils import pin_memory as pm
        orig_pin = pm.pin_memory

        def pin_memory(data, *a, **kw):
            t = _perf()
            r = orig_pin(data, *a, **kw)
            _reporter.raw('{"ev":"pin","ns":%d}\n' % (_perf() - t))
            return r
        pm.pin_memory = pin_memory
    except Exception:
        pass

    # One process: multi-process training is refused, never half-measured.
    try:
        import torch.distributed as dist
        orig_ipg = dist.init_process_group

        def init_process_group(*a, **kw):
            _refuse("multi-process training (torch.distributed.init_process_group) is out of scope: run the script as one process")
            return orig_ipg(*a, **kw)
        dist.init_process_group = init_process_group
    except Exception:
        pass


def _overhead(n):
    """Nanoseconds the timed cache iterator adds per batch over a plain
    iteration of the same list: headspace's benchmark of the hook."""
    global _reporter
    items = list(range(n))
    t = _perf()
    for _ in items:
        pass
    plain = _perf() - t
    saved = _reporter
    _reporter = _Reporter(os.open(os.devnull, os.O_WRONLY))
    st = _State({"num_caches": 10, "return_caches_after": n + 1, "steps_after": 1})
    t = _perf()
    it = _Timed(lambda: items, st)
    for _ in range(n):
        next(it)
    timed = _perf() - t

    # In a worker: a torchvision-style dataset's __getitem__, .loader and
    # .transform timed per sample, collate timed and its event written
    # per batch, over batches of 32 trivial samples.
    class Folder:
        def __init__(self):
            self.loader = lambda i: i
            self.transform = lambda x: x

        def __getitem__(self, i):
            return self.transform(self.loader(i))

    class Loader:
        pass

    def run_batches(ds, collate, batches):
        t = _perf()
        for b in range(batches):
            collate([ds[i] for i in range(32 * b, 32 * b + 32)])
        return _perf() - t

    wb = max(1, n // 32)
    plain_w = run_batches(Folder(), list, wb)
    dl = Loader()
    dl.dataset, dl.collate_fn, dl.num_workers, dl.multiprocessing_context = Folder(), list, 0, None
    _instrument(dl, "none")
    timed_w = run_batches(dl.dataset, dl.collate_fn, wb)
    os.close(_reporter.fd)
    _reporter = saved
    print(json.dumps({"batches": n, "plain_ns": plain, "hook_ns": timed, "per_batch_ns": (timed - plain) / n,
                      "worker_batches": wb, "worker_per_batch_ns": (timed_w - plain_w) / wb}))


def main(argv):
    global _settings, _reporter
    if len(argv) >= 2 and argv[0] == "--overhead":
        _overhead(int(argv[1]))
        return
    if not argv:
        sys.stderr.write("usage: python -m headspace_hook SCRIPT [ARGS...] | -m MODULE [ARGS...]\n")
        sys.exit(2)
    _settings = json.loads(os.environ.get("HEADSPACE_HOOK", "{}"))
    fd = os.environ.get("HEADSPACE_HOOK_FD")
    if fd:
        _reporter = _Reporter(int(fd))
        os.set_inheritable(int(fd), True)
    # The training script sees neither the hook's settings nor its module.
    os.environ.pop("HEADSPACE_HOOK", None)
    if os.environ.get("WORLD_SIZE", "1") not in ("", "1") or "LOCAL_RANK" in os.environ:
        _refuse("multi-process training (torchrun: WORLD_SIZE %s) is out of scope: run the script as one process" % os.environ.get("WORLD_SIZE", "?"))
    try:
        _patch_torch()
    except ImportError as e:
        _refuse("torch is not importable by %s: %s" % (sys.executable, e))
    import runpy
    sys.modules["headspace_hook"] = sys.modules[__name__]
    if argv[0] == "-m":
        if len(argv) < 2:
            _refuse("-m needs a module name")
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        script = argv[0]
        sys.argv = argv[:]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")
    _reporter.send({"ev": "end", "batches": _state.batches if _state is not None else 0})


if __name__ == "__main__":
    main(sys.argv[1:])
