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
``steps_after`` steps. The other DataLoaders of its CombinedLoader
(Lightning's) are kept and replayed from the same step. It times every step, batch request to batch request,
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
from collections.abc import Mapping

__all__ = ["wrap", "cache_iterator"]

_perf = time.perf_counter_ns

# Exit statuses the hook uses; headspace maps them to one line and exit 2.
EXIT_REFUSED = 3
# The hook's events could not be written: the script closed or replaced
# their descriptor (headspace names it).
EXIT_CHANNEL = 4


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

    def __init__(self, fd, tag=""):
        self.fd = fd
        self.lock = threading.Lock()
        self.tag = tag  # '{"r":R,' in a rank: each line says whose it is

    def send(self, obj):
        self.raw(json.dumps(obj, separators=(",", ":")) + "\n")

    def raw(self, line):
        if self.fd is None:
            return
        if self.tag:
            line = self.tag + line[1:]
        data = line.encode()
        try:
            with self.lock:
                os.write(self.fd, data)
        except OSError as e:
            # headspace is gone (or a spawned worker without the pipe, or
            # the script closed the descriptor): a worker stops
            # reporting; the main process says so and stops.
            fd, self.fd = self.fd, None
            if os.getpid() == _MAIN_PID:
                try:
                    sys.stderr.write("headspace_hook: writing its events to file descriptor %d: %s\n" % (fd, e))
                    sys.stderr.flush()
                except Exception:
                    pass
                os._exit(EXIT_CHANNEL)


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
            cached = self.level in ("host", "device")  # device: host's, and the copy kept (_keep_device_copies)
            self.num_caches = 1
            self.switch = 1 if cached else 0
            self.total = warm + int(cfg.get("steps", 10))
            self.caching = cached
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
        self.trained = False      # a step of this loop ran a backward pass
        self.extra = 0            # batches served after the last step, while it is unsure (_complete)
        self.backwards = 0        # _backwards at the last batch
        self.seq = 0              # _seq at the last batch
        self.unsure = False       # every step is in, none of them trained
        self.index = 0            # the loader's number
        self.key = None           # where its DataLoader was made (_stack_key)
        self.made = 0             # DataLoaders made when it was found: one made later at key is its own


_state = None
_claimed = False       # the training loop is chosen (a DataLoader or wrap())
_loaders = {}          # number -> DataLoader (or wrapped iterable), in order of first iteration
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


# Backward passes run so far in the main process: a loop whose steps run
# none is not the training loop (a statistics pass, a peek) while another
# loop's do.
_backwards = [0]
# The wait for other loaders' batches (_Other) since the training loop's
# last step: a loader zipped with it is waited for inside its steps.
_other_wait = [0]
# Batches delivered so far by every loader, in order: which loader fed a
# step last.
_seq = [0]
# DataLoaders made so far: one made at the training loader's place after
# it was found is the next epoch's; one made before it (a dict of train and
# validation loaders made on one line) is another loader.
_made = [0]


def _patch_backward(torch):
    """Counts torch.autograd's backward passes (Tensor.backward calls
    torch.autograd.backward) and gradients taken."""
    import torch.autograd as ag
    for name in ("backward", "grad"):
        orig = getattr(ag, name, None)
        if orig is None:
            continue

        def counted(*a, _orig=orig, **kw):
            if os.getpid() == _MAIN_PID:
                _backwards[0] += 1
            return _orig(*a, **kw)
        counted.__wrapped__ = orig
        setattr(ag, name, counted)


def _complete(st):
    """Every step of st is in. A loop whose steps trained nothing may be a
    statistics pass before the training loop: it goes on unmeasured for as
    many batches again (or to its pass's end) to see whether another
    loader's steps train (_Other) before it is taken as the training
    loop's."""
    if st.trained or st.extra >= st.total:
        _finish()
    if not st.unsure:
        st.unsure = True
        _reporter.send({"ev": "unsure", "index": st.index})
    st.extra += 1
    _reporter.raw('{"ev":"extra"}\n')


class _Timed:
    """The cache iterator over one epoch of the training loop's source,
    timing each step: the time from one batch request to the next, and the
    wait inside each request."""

    def __init__(self, make_src, st, length=None, caches=None):
        self.make_src = make_src
        self.src = None
        self.st = st
        self.length = length  # an epoch's batches, cached ones counted (CacheDataLoader's)
        self.n = 0
        # The batches replayed: the loop's (st.caches), or, for a loader
        # of a CombinedLoader iterated in turn (sequential), its own.
        self.caches = st.caches if caches is None else caches

    def __iter__(self):
        return self

    def __next__(self):
        st = self.st
        t0 = _perf()
        if st.unsure:
            if self.n == 0:
                _finish()  # a new pass of the loop measured: it is the training loop
            _complete(st)
            return self._serve()
        # A pass that starts where the last one was left (break, islice):
        # its first batch waits for the workers to start again.
        restart = self.n == 0 and st.last_call is not None and not (st.caching and st.batches >= st.switch and self.caches)
        if st.last_call is not None:
            phase = "epoch" if st.boundary else st.last_phase
            if st.boundary and st.mode == "ladder":
                st.total += 1  # the ladder times its steps whole: this one is left out
            if _backwards[0] != st.backwards:
                st.trained = True
            _reporter.raw('{"ev":"step","i":%d,"ns":%d,"wait":%d,"ph":"%s","ow":%d}\n'
                          % (st.batches - 1, t0 - st.last_call, st.last_wait, phase, _other_wait[0]))
            _other_wait[0] = 0
            st.boundary = False
        if restart:
            st.boundary = True
        if st.batches >= st.total:
            st.done = True
            _reporter.send({"ev": "cpu", "at": st.batches, "ns": time.process_time_ns()})
            _complete(st)
            return self._serve()
        if st.batches == st.switch and st.caching:
            _reporter.send({"ev": "cpu", "at": st.batches, "ns": time.process_time_ns()})
        if st.caching and st.batches >= st.switch and self.caches:
            if self.length is not None and self.n >= self.length:
                st.boundary = True  # the epoch ends, as CacheDataLoader's does
                st.last_call = None
                raise StopIteration
            batch = self.caches[(st.batches - st.switch) % len(self.caches)]
            phase = "cached"
            if st.batches == st.switch:
                # The first cached batch: its step may be marked epoch,
                # so the switch is said (every rank's must match).
                _reporter.send({"ev": "switch", "i": st.batches})
        else:
            if self.src is None:
                self.src = iter(self.make_src())
            try:
                batch = next(self.src)
            except StopIteration:
                st.boundary = True
                st.last_call = None
                raise
            if st.caching and len(self.caches) < st.num_caches:
                self.caches.append(batch)
                if st.level == "device":
                    _cache_device(batch)
            phase = "loader"
            if st.caching and st.batches >= st.switch:
                st.boundary = True  # a loader of a sequential CombinedLoader begun after the switch: its first batch is left out
            if st.caching and st.batches + 1 >= st.switch and self.caches:
                self.src = None  # SPDL drops the source at the switch
        t1 = _perf()
        if st.batches == 0:
            _reporter.send({"ev": "first", "wait": t1 - t0})
        st.last_call, st.last_wait, st.last_phase = t0, t1 - t0, phase
        st.backwards = _backwards[0]
        _seq[0] += 1
        st.seq = _seq[0]
        st.batches += 1
        self.n += 1
        return batch

    def _serve(self):
        """A batch after every step is in (_complete): from the caches, or
        the loader, untimed; the pass ends where it would."""
        st = self.st
        if self.length is not None and self.n >= self.length:
            raise StopIteration
        if st.caching and self.caches:
            batch = self.caches[st.extra % len(self.caches)]
        else:
            if self.src is None:
                self.src = iter(self.make_src())
            batch = next(self.src)
        self.n += 1
        return batch


def wrap(iterable, name=None):
    """The training loop's batches, measured: under headspace, iterable in
    the cache iterator, timed step by step; otherwise iterable itself.
    The first wrap (or DataLoader, whichever is iterated first) is the
    training loop. What wrap returns can be iterated again, one pass an
    epoch, as iterable can (wrapping iterable again, each epoch, returns
    the same measurement); each pass keeps iterable's length (len), as a
    DataLoader's does. There is no dataset to time or cache in: ladder
    levels sample and raw are refused on it, and the steps are taken to
    train (a loop of another framework runs no torch backward pass)."""
    global _claimed, _state
    if _reporter.fd is None:
        return iterable
    if _claimed:
        if _state is not None and _loaders.get(_state.index) is iterable:
            return _Wrapped(iterable, _state)
        return iterable
    _claimed = True
    if _state is None:
        _state = _State(_settings)
    if _state.mode == "ladder" and _state.level in ("sample", "raw", "device"):
        _refuse("level %s needs a DataLoader's dataset; the training loop is an iterable given to wrap() (%s), which has none: "
                "its levels are host and none" % (_state.level, type(iterable).__name__))
    _state.trained = True
    _reporter.send({"ev": "loader", "index": len(_loaders) + 1, "site": name or _site(), "kind": type(iterable).__name__, "target": True,
                    "forked": True, "wrapped": True})
    _state.index = len(_loaders) + 1
    _loaders[len(_loaders) + 1] = iterable
    return _Wrapped(iterable, _state)


class _Wrapped:
    """What wrap() returns: each iter() one pass of the iterable in the
    cache iterator (_Timed) over the one measurement; next() on it
    iterates the first pass (a loop that calls next itself)."""

    def __init__(self, iterable, st):
        self.iterable, self.st, self.it = iterable, st, None
        try:
            self.length = len(iterable)
        except TypeError:
            self.length = None

    def __iter__(self):
        return _Timed(lambda: self.iterable, self.st, self.length)

    def __next__(self):
        if self.it is None:
            self.it = iter(self)
        return next(self.it)

    def __len__(self):
        if self.length is None:
            raise TypeError("object of type %s has no len()" % type(self.iterable).__name__)
        return self.length


# The site of the first DataLoader made over each dataset (by id): a
# framework that makes the loader again inside its own code (Lightning
# does, to set its sampler) names the user's line, not its own.
_dataset_sites = {}


def _installed(fn):
    """The installed package (a framework) fn is a file of, or "" for the
    user's own file."""
    for d in ("site-packages", "dist-packages"):
        _, sep, rest = fn.partition(os.sep + d + os.sep)
        if sep:
            return rest.split(os.sep)[0]
    return ""


def _frames():
    """The frames outside the hook and torch.utils.data, innermost first."""
    f = sys._getframe(2)
    here = os.path.abspath(__file__)
    while f is not None:
        fn = f.f_code.co_filename
        if os.path.abspath(fn) != here and "torch" + os.sep + "utils" + os.sep + "data" not in fn:
            yield f
        f = f.f_back


def _site():
    """file:line of the user's frame that called into the hook: the
    innermost outside installed packages (a framework's own code), else
    the innermost."""
    first = None
    for f in _frames():
        here = "%s:%d" % (os.path.basename(f.f_code.co_filename), f.f_lineno)
        if not _installed(f.f_code.co_filename):
            return here
        first = first or here
    return first or "?"


def _loader_site(dl):
    """Where dl was made (_site); for a loader a framework made again over
    the dataset of a loader made before, where that one was made and by
    which package (``train.py:38, re-made by lightning``)."""
    site = _site()
    inner = next(_frames(), None)
    key = id(getattr(dl, "dataset", None))
    first = _dataset_sites.get(key)
    if first is None:
        _dataset_sites[key] = site
    elif inner is not None and _installed(inner.f_code.co_filename) and first != site:
        return "%s, re-made by %s" % (first, _installed(inner.f_code.co_filename))
    return site


def _stack_key():
    """The user's frames that made a DataLoader, as (file, line) from the
    innermost out: a loader made at the same place each epoch is the same
    training loop, one made by the same helper for another caller is not."""
    f = sys._getframe(1)
    here = os.path.abspath(__file__)
    key = []
    while f is not None:
        fn = f.f_code.co_filename
        if os.path.abspath(fn) != here and "torch" + os.sep + "utils" + os.sep + "data" not in fn:
            key.append((fn, f.f_lineno))
        f = f.f_back
    return tuple(key)


def _loader_iter(dl, orig_iter, want):
    """iter(dl) in the script: the training loop's loader timed in the
    cache iterator (_Timed), any other counted as it is (_Other). A
    loader made where the training loader was made, after it was found
    (a new one each epoch), is the training loop's."""
    global _claimed, _state
    if os.getpid() != _MAIN_PID:
        return orig_iter(dl)
    if threading.current_thread() is not threading.main_thread():
        _thread_note(dl)
        return orig_iter(dl)
    g = getattr(dl, "_headspace_group", None)
    if g is None:
        g = _combined(dl)
    num = getattr(dl, "_headspace_num", None)
    if num is None:
        key = getattr(dl, "_headspace_key", None)
        if _state is not None and _state.key is not None and key == _state.key and getattr(dl, "_headspace_made", 0) > _state.made:
            _adopt(dl, _state)
        else:
            num = len(_loaders) + 1
            _loaders[num] = dl
            dl._headspace_num = num
            target = not _claimed and num == want
            ev = {"ev": "loader", "index": num, "site": getattr(dl, "_headspace_site", "?"), "kind": type(dl).__name__, "target": target}
            ev.update(_describe(dl))
            via = g.via if g is not None else _wrapper(dl)
            if via:
                ev["via"] = via
                dl._headspace_via = via
            if target:
                _claimed = True
                _state = _State(_settings)
                _state.index, _state.key, _state.made = num, key, _made[0]
                _adopt(dl, _state)
                ev["own"] = dl._headspace_own
                ev.update(_describe(dl))
                ev["num_workers"] = dl.num_workers
                if _state.mode == "ladder" and int(_settings.get("warmup", 0)) <= 0:
                    # The batches the workers prefetched while the loop
                    # started come in a burst: the warm-up leaves them out.
                    ahead = dl.num_workers * (dl.prefetch_factor or 2) if dl.num_workers > 0 else 0
                    _state.total = 1 + ahead + int(_settings.get("steps", 10))
                    ev["warmup"] = 1 + ahead
            elif _settings.get("mode", "analyze") == "analyze":
                # Timed too, in case its steps turn out to be the training
                # loop's (_Other): events name their loader.
                dl._headspace_measured = _instrument(dl, "none", num)
            ev["measured"] = getattr(dl, "_headspace_measured", None) or {}
            ev["forked"] = _fork_workers(dl)
            _reporter.send(ev)
            if g is not None:
                if target:
                    _join(g, dl, _state)
                elif g.state is not None:
                    _member(g, dl)  # the training loop's loader's fellow, iterated after it
    st = getattr(dl, "_headspace_state", None)
    if st is None:
        if _state is not None and _state.last_call is not None and (g is None or g.state is None):
            _state.boundary = True  # a validation pass inside the training loop
        o = _Other(dl, orig_iter(dl), dl._headspace_num)
        if g is not None:
            import weakref
            g.live[id(dl)] = weakref.ref(o)  # not kept alive: a pass left behind lets its workers go
        return o
    try:
        length = len(dl)
    except TypeError:
        length = None
    if getattr(dl, "_headspace_member", False):
        if g.mode == "sequential":
            return _Timed(lambda: orig_iter(dl), st, length, dl._headspace_caches)
        return _Member(dl, lambda: orig_iter(dl), st, length)
    return _Timed(lambda: orig_iter(dl), st, length)


# ---------------------------------------------------------------------------
# A framework's loader over several DataLoaders at once (Lightning's
# CombinedLoader: trainer.fit(model, train_dataloaders={"a": dl_a, "b":
# dl_b}), or one the script makes): its mode's iterator holds the loaders
# in a list (.iterables) and calls iter() on each. When one of them is the
# training loop's loader, every other one is measured with it: its
# batches are kept and replayed from the same step as the training
# loader's (a combined batch is never half cached), and its wait for a
# batch counts in the step's. In the modes that take a batch of every
# loader a step (max_size_cycle, min_size, max_size) the steps are timed
# at the training loader's requests (_Member for the others); in
# sequential mode, which iterates one loader after another, each loader's
# pass is timed in turn over the one measurement, each replaying its own
# batches (_Timed with its caches).

_MODES = {"_MaxSizeCycle": "max_size_cycle", "_MinSize": "min_size", "_MaxSize": "max_size", "_Sequential": "sequential"}


class _Group:
    """The DataLoaders of one CombinedLoader."""

    def __init__(self, members, mode, via):
        self.members, self.mode, self.via = members, mode, via
        self.state = None  # the measurement, once one of them is the training loop's
        self.target = None
        self.live = {}     # id(member) -> a weak reference to its _Other for the pass under way


def _combined(dl):
    """The _Group of the loaders dl is iterated with by a framework's
    loader over several (Lightning's CombinedLoader), or None: the
    framework's object that calls iter(dl) holds dl in a list named
    iterables with another DataLoader."""
    try:
        import torch.utils.data as tud
        here = os.path.abspath(__file__)
        f = sys._getframe(2)
        for _ in range(8):
            if f is None:
                return None
            if os.path.abspath(f.f_code.co_filename) != here:
                obj = f.f_locals.get("self")
                its = getattr(obj, "iterables", None) if obj is not None else None
                if isinstance(its, list) and any(x is dl for x in its):
                    members = [x for x in its if isinstance(x, tud.DataLoader)]
                    if len(members) < 2:
                        return None
                    pkg = _installed(f.f_code.co_filename)
                    mode = _MODES.get(type(obj).__name__, type(obj).__name__)
                    if pkg in ("lightning", "pytorch_lightning"):
                        via = "CombinedLoader (%s, mode %s)" % (pkg, mode)
                    else:
                        via = "%s (%s)" % (type(obj).__name__, pkg or os.path.basename(f.f_code.co_filename))
                    g = _Group(members, mode, via)
                    for m in members:
                        m._headspace_group = g
                    return g
            f = f.f_back
    except Exception:
        return None
    return None


def _join(g, dl, st):
    """dl, of g, is the training loop's loader, measured in st: every
    other loader of g is measured with it (_member)."""
    g.state, g.target = st, dl
    for m in g.members:
        if m is not dl and getattr(m, "_headspace_num", None) is not None:
            _member(g, m)


def _member(g, m):
    """m, a loader of g iterated already, is measured beside the training
    loop's loader: said, timed as it is (its level applied), its batches
    kept from now on; a pass of it under way goes on as a _Member."""
    st = g.state
    if getattr(m, "_headspace_member", False) and getattr(m, "_headspace_state", None) is st:
        return
    m._headspace_state, m._headspace_member = st, True
    m._headspace_caches = [] if g.mode == "sequential" else {}
    at = [i for i, x in enumerate(g.members) if x is m or x is g.target]
    # Whether the mode's iterator asks the training loader for its batch
    # before this one's, each step (the order of .iterables).
    m._headspace_lead_first = at and g.members[at[0]] is g.target
    if getattr(m, "_headspace_measured", None) is None:
        _adopt(m, st, member=True)
    _reporter.send({"ev": "member", "index": m._headspace_num, "of": st.index, "mode": g.mode})
    ref = g.live.pop(id(m), None)
    o = ref() if ref is not None else None
    if o is not None and o.timed is None and g.mode != "sequential":
        try:
            length = len(m)
        except TypeError:
            length = None
        it = o.it
        o.timed = _Member(m, lambda: it, st, length, o.n)


class _Member:
    """A pass of a loader measured beside the training loop's loader, in
    a mode that takes a batch of each a step: the step's batch of it
    follows the training loader's in the same step (pos, the training
    loader's batch number that step): from the loader before the switch
    (kept where the training loader's is kept, in the same slot), then
    from its kept ones, the slot the training loader replays that step,
    so that a combined batch is never half cached nor made of batches of
    different steps (min_size's last request of the longer loader, which
    the step drops, included); its wait for a batch is added to the
    step's; a pass keeps its length."""

    def __init__(self, dl, make_src, st, length, n=0):
        self.dl, self.make_src, self.src, self.st, self.length, self.n = dl, make_src, None, st, length, n

    def __iter__(self):
        return self

    def __len__(self):
        if self.length is None:
            raise TypeError("a loader without a length")
        return self.length

    def __next__(self):
        st, dl = self.st, self.dl
        caches = dl._headspace_caches
        pos = st.batches - 1 if dl._headspace_lead_first else st.batches
        if st.caching and pos >= st.switch and caches:
            if self.length is not None and self.n >= self.length:
                st.boundary = True  # its pass ends: the step spans the epoch's end (min_size) or its workers' new start
                raise StopIteration
            slot = (pos - st.switch) % max(1, len(st.caches))
            batch = caches.get(slot)
            if batch is None:  # the training loader's batch of that slot was dropped with its step
                batch = caches[sorted(caches)[slot % len(caches)]]
        else:
            if self.src is None:
                self.src = iter(self.make_src())
                if self.n == 0 and st.last_call is not None:
                    st.boundary = True  # its workers start again (a pass of a shorter loader, cycled)
            t = _perf()
            try:
                batch = next(self.src)
            except StopIteration:
                st.boundary = True
                raise
            if st.last_call is not None:
                st.last_wait += _perf() - t
            if st.caching and 0 <= pos < st.num_caches:
                caches[pos] = batch
            if st.caching and pos + 1 >= st.switch and caches:
                self.src = None
        self.n += 1
        return batch


def _wrapper(dl):
    """The framework's object that iterates dl on the script's behalf and
    holds it as an attribute (Accelerate's DataLoaderShard, timm's
    PrefetchLoader), as "DataLoaderShard (accelerate)", or "" if none."""
    try:
        f = sys._getframe(3)  # _wrapper, _loader_iter, DataLoader.__iter__, the caller
        here = os.path.abspath(__file__)
        while f is not None and os.path.abspath(f.f_code.co_filename) == here:
            f = f.f_back
        if f is None or not _installed(f.f_code.co_filename):
            return ""
        obj = f.f_locals.get("self")
        if obj is None or obj is dl or not any(v is dl for v in vars(obj).values()):
            return ""
        return "%s (%s)" % (type(obj).__name__, _installed(f.f_code.co_filename))
    except Exception:
        return ""


def _adopt(dl, st, member=False):
    """dl feeds the training loop measured in st (beside its loader, for
    a member of a CombinedLoader: it keeps its own number): its workers
    set (whatif --verify), its dataset and collate timed, the ladder's
    level applied."""
    if not member:
        dl._headspace_num = st.index
    if int(_settings.get("workers", 0)) > 0:
        # whatif --verify: the worker count it predicts for
        dl.num_workers = int(_settings["workers"])
        if dl.num_workers > 0 and getattr(dl, "prefetch_factor", 2) is None:
            dl.prefetch_factor = 2
    # headspace tune: the candidate's settings (the script's own kept to say)
    dl._headspace_own = _loader_settings(dl, _settings.get("tune"))
    dl._headspace_state = st
    dl._headspace_measured = _instrument(dl, _settings.get("level", "none"), dl._headspace_num)


_threads = []


def _thread_note(dl):
    """A DataLoader iterated in a thread other than the main one, before
    the training loop is found: headspace says so if none comes."""
    if not _threads and not _claimed:
        _threads.append(1)
        _reporter.send({"ev": "thread", "name": threading.current_thread().name, "site": getattr(dl, "_headspace_site", "?")})


class _Other:
    """A loader that is not the training loop's, iterated as it is: each
    batch counted and its wait timed ("other" events, which show a loader
    that feeds every step beside the training loader, as zip does). Where
    its steps run a backward pass and the training loop's never did (a
    statistics pass, a peek with next(iter(...))), it is the training
    loop: analyze measures it from there on, ladder names it."""

    def __init__(self, dl, it, num):
        self.dl, self.it, self.num = dl, it, num
        self.n = 0
        self.backwards = None  # _backwards at its last batch
        self.seq = 0           # _seq at its last batch
        self.timed = None

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.it)

    def __next__(self):
        if self.timed is not None:
            return next(self.timed)
        st = _state
        g = getattr(self.dl, "_headspace_group", None)
        if g is not None and g.state is not None and g.state is st:
            pass  # its group is measured: it follows (_member), it does not take the loop
        elif st is not None and self.backwards is not None:
            if not st.trained and _backwards[0] != self.backwards and st.seq < self.seq:
                # A step fed by this loader alone trained.
                return self._take(st)
            if st.unsure:
                _finish()  # this loop trains no more than the one measured
        t = _perf()
        b = next(self.it)
        w = _perf() - t
        self.n += 1
        self.backwards = _backwards[0]
        _seq[0] += 1
        self.seq = _seq[0]
        _other_wait[0] += w
        _reporter.raw('{"ev":"other","l":%d,"wait":%d}\n' % (self.num, w))
        return b

    def _take(self, old):
        global _state
        dl = self.dl
        if old.mode != "analyze":
            _refuse("loader #%d (at %s) fed steps that trained nothing (no backward pass) and loader #%d (at %s) feeds steps that train: "
                    "it is the training loop; run again with --loader %d" % (old.index, getattr(_loaders.get(old.index), "_headspace_site", "?"),
                                                                             self.num, getattr(dl, "_headspace_site", "?"), self.num))
        st = _State(_settings)
        st.index, st.key, st.made = self.num, getattr(dl, "_headspace_key", None), _made[0]
        _state = st
        first = _loaders.get(old.index)
        if first is not None and getattr(first, "_headspace_state", None) is old:
            first._headspace_state = None  # iterated as it is from now on
        dl._headspace_state = st
        ev = {"ev": "retarget", "index": self.num, "from": old.index, "site": getattr(dl, "_headspace_site", "?"), "kind": "DataLoader", "target": True,
              "measured": getattr(dl, "_headspace_measured", None) or {}, "forked": _fork_workers(dl)}
        ev.update(_describe(dl))
        if getattr(dl, "_headspace_via", ""):
            ev["via"] = dl._headspace_via
        _reporter.send(ev)
        og = getattr(first, "_headspace_group", None) if first is not None else None
        if og is not None and og.state is old:
            for m in og.members:  # the loop first measured was a CombinedLoader's: its loaders go back as they are
                if getattr(m, "_headspace_state", None) is old:
                    m._headspace_state, m._headspace_member = None, False
            og.state = og.target = None
        g = getattr(dl, "_headspace_group", None)
        if g is not None:
            _join(g, dl, st)
        try:
            length = len(dl)
        except TypeError:
            length = None
        it = self.it
        self.timed = _Timed(lambda: it, st, length)
        self.timed.n = self.n
        return next(self.timed)


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
    """fn timed into the worker's stage counters under key; fn itself
    where it is timed already (a dataset that a loader made anew each
    epoch iterates again: timed twice, its stage would count twice)."""
    if getattr(fn, "_headspace_timer", False):
        return fn
    ckey = key + "_cpu"

    def timed(*a, **kw):
        t, c = _perf(), _cpu()
        r = fn(*a, **kw)
        _stage[ckey] += _cpu() - c
        _stage[key] += _perf() - t
        return r
    timed.__wrapped__ = fn
    timed._headspace_timer = True
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


def _raw_replay(ds, getitem):
    """Level raw on a map-style dataset with a .transform and no .loader
    (torchvision's CIFAR10 and MNIST, most datasets of one's own): the
    sample before the transforms is what __getitem__ hands its .transform.
    One sample is made here, in the main process (index 0), with the
    .transform's inputs and outputs recorded; every later __getitem__
    (in the workers, which inherit it by fork) makes no fetch: it applies
    the .transform anew to the recorded inputs (random augmentations
    drawn anew) and returns the recorded sample with the new outputs in
    place of the recorded ones. Everything else __getitem__ does (the
    read, the decode, a target_transform) is left out, as a cached
    .loader leaves out reading and decoding. Refused where __getitem__
    calls no .transform, or returns its outputs changed (not as they are,
    nor inside a tuple, list or dict), as the replay could not give the
    script the sample it expects. Returns replay(self)."""
    name = type(ds).__name__
    own = "transform" in vars(ds)
    tf = ds.transform
    calls = []

    def recording(x):
        y = tf(x)
        calls.append((x, y))
        return y
    ds.transform = recording
    try:
        r = getitem(ds, 0)
    except Exception as e:
        _refuse("level raw: %s[0], made to record what its .transform is given, raised %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:200] if str(e) else ""))
    finally:
        if own:
            ds.transform = tf
        else:
            del ds.transform
    if not calls:
        _refuse("level raw: %s.__getitem__ did not call its .transform (a .transforms of its own?): there is no sample before the transforms to keep" % name)
    outs = [y for _, y in calls]
    if len(outs) == 1 and r is outs[0]:
        x0 = calls[0][0]
        return lambda self: self.transform(x0)
    if isinstance(r, (tuple, list)):
        slots = list(enumerate(r))
    elif isinstance(r, dict):
        slots = list(r.items())
    else:
        slots = []
    where = {}  # the call whose output each slot holds
    for k, v in slots:
        for j, y in enumerate(outs):
            if v is y:
                where[k] = j
                break
    if set(where.values()) != set(range(len(outs))):
        _refuse("level raw: %s.__getitem__ returns %s, not its .transform's output as it is (nor in a tuple, list or dict): "
                "the sample before the transforms cannot be replayed; leave raw out of --levels" % (name, type(r).__name__))
    inputs = [x for x, _ in calls]

    def replay(self):
        ys = [self.transform(x) for x in inputs]
        if isinstance(r, dict):
            out = dict(r)
        else:
            out = list(r)
        for k, j in where.items():
            out[k] = ys[j]
        if isinstance(r, tuple):
            return type(r)(out) if type(r) is tuple else type(r)(*out)
        if isinstance(r, list):
            return out
        return out if type(r) is dict else type(r)(out)
    return replay


def _instrument(dl, level, index=0):
    """Times dl's dataset and collate in the processes that run them, and
    applies a ladder level below host: sample (the dataset returns one
    cached processed sample) or raw (its .loader returns one cached
    loaded item, the transform still applied). Returns what it measures."""
    ds = dl.dataset
    measured = {"getitem": False, "split": False, "collate": False, "iterable": False}
    if not _fork_workers(dl):
        if level in ("sample", "raw"):
            _refuse("level %s needs forked DataLoader workers (multiprocessing start method fork) or num_workers=0" % level)
        return _instrument_spawned(dl, measured)
    cls = type(ds)
    iterable = False
    try:
        from torch.utils.data import IterableDataset
        iterable = isinstance(ds, IterableDataset)
    except ImportError:
        pass
    if getattr(cls, "_headspace_timed", False):
        measured["getitem"], measured["iterable"] = True, iterable  # timed already (the dataset of another loader)
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
        replay = None
        if level == "raw" and not callable(getattr(ds, "loader", None)) and callable(getattr(ds, "transform", None)):
            replay = _raw_replay(ds, getitem)

        def timed_getitem(self, index, _orig=getitem):
            t, c = _perf(), _cpu()
            if replay is not None:
                r = replay(self)
            elif level != "sample":
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
                if level == "sample" or replay is not None:
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
    # Level raw applies to a .loader (torchvision-style) or, on a
    # map-style dataset, a .transform (_raw_replay).
    measured["raw"] = callable(ld) or (callable(tf) and not iterable and getattr(cls, "__getitem__", None) is not None)
    if callable(ld):
        if level == "raw" and not getattr(ld, "_headspace_timer", False):
            ld = _first_only(ld)
        ds.loader = _timer(ld, "load")
        if callable(tf):
            ds.transform = _timer(tf, "transform")
        measured["split"] = True
    elif measured["raw"]:
        ds.transform = _timer(tf, "transform")  # timed: the part of __getitem__ level raw keeps
    elif level == "raw":
        _refuse("level raw needs a dataset with a .loader (torchvision-style: ImageFolder, DatasetFolder) or a map-style dataset with a .transform "
                "(CIFAR10, MNIST, most datasets of one's own); %s has neither" % cls.__name__)
    collate = dl.collate_fn

    def timed_collate(batch, _orig=collate):
        t, tc = _perf(), _cpu()
        r = _orig(batch)
        c, cc = _perf() - t, _cpu() - tc
        info = _worker_info()
        s = _stage
        _reporter.raw('{"ev":"stage","l":%d,"w":%d,"n":%d,"getitem":%d,"load":%d,"transform":%d,"collate":%d,"cpu":%d,'
                      '"getitem_cpu":%d,"load_cpu":%d,"transform_cpu":%d,"collate_cpu":%d,"runq":%d}\n'
                      % (index, info.id if info is not None else -1, s["samples"], s["getitem"], s["load"], s["transform"], c, time.process_time_ns(),
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
    bs = dl.batch_size
    if bs is None:  # a batch sampler of its own (Accelerate's BatchSamplerShard)
        bs = getattr(dl.batch_sampler, "batch_size", None)
    return {"dataset": type(ds).__name__, "batch_size": bs if isinstance(bs, int) else 0,
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


# Level device: the batch after the script's own copy to the device, kept
# there. The loader replays its first batch as at level host; the first
# copy the script makes of each of that batch's tensors to another device
# (Tensor.to, Tensor.cuda) is kept, and a later copy of the same tensor
# with the same arguments (non_blocking aside) is that one: no copy again.
# Like the document's level device, a script that changes the copy in
# place changes the batch every later step sees.
_device_ids = set()     # id() of the cached batch's tensors (the cache holds them)
_device_copies = {}     # (id, method, arguments) -> the kept copy


def _cache_device(batch):
    """Marks batch's tensors (in tuples, lists and mappings) as the
    cached batch's, whose copies to a device are kept."""
    stack = [batch]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, Mapping):
            stack.extend(x.values())
        elif hasattr(x, "is_cuda") and hasattr(x, "device"):
            _device_ids.add(id(x))


def _keep_device_copies(torch):
    """Wraps Tensor.to and Tensor.cuda so that a cached batch's copies to a
    device are kept (_cache_device)."""
    cls = torch.Tensor

    def arg(a):
        return ("tensor", id(a)) if isinstance(a, cls) else repr(a)

    def wrap(name, orig):
        def copy(self, *a, **kw):
            if id(self) not in _device_ids:
                return orig(self, *a, **kw)
            key = (id(self), name, tuple(arg(x) for x in a), tuple(sorted((k, arg(v)) for k, v in kw.items() if k != "non_blocking")))
            kept = _device_copies.get(key)
            if kept is not None:
                return kept
            r = orig(self, *a, **kw)
            if isinstance(r, cls) and r.device != self.device:
                _device_copies[key] = r
            return r
        copy.__wrapped__ = orig
        return copy
    cls.to = wrap("to", cls.to)
    cls.cuda = wrap("cuda", cls.cuda)


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
        _keep_device_copies(torch)

    DataLoader = tud.DataLoader
    orig_iter = DataLoader.__iter__
    orig_init = DataLoader.__init__
    want = int(_settings.get("loader", 1))

    def __init__(self, *a, **kw):
        orig_init(self, *a, **kw)
        try:
            object.__setattr__(self, "_headspace_site", _loader_site(self))
            object.__setattr__(self, "_headspace_key", _stack_key())
            _made[0] += 1
            object.__setattr__(self, "_headspace_made", _made[0])
        except Exception:
            pass

    def __iter__(self):
        return _loader_iter(self, orig_iter, want)

    DataLoader.__init__ = __init__
    DataLoader.__iter__ = __iter__
    try:
        _patch_backward(torch)
    except Exception:
        pass

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

    _patch_ranks()


# ---------------------------------------------------------------------------
# Ranks: one process a rank, started by torchrun (python -m
# torch.distributed.run, accelerate launch), srun's tasks, or the script's
# own torch.multiprocessing.spawn.
#
# headspace runs a launcher's ranks under this module (torchrun ... -m
# headspace_hook SCRIPT ARGS..., srun ... python -m headspace_hook SCRIPT
# ARGS...), and wraps the function a script hands to
# torch.multiprocessing.spawn so that each spawned rank runs it under the
# hook. A rank reaches headspace through its FIFO (HEADSPACE_HOOK_FIFO: the
# launcher closes the descriptors it does not know), each line tagged with
# the rank's number; its workers, forked, inherit the tag. Every rank wraps
# its own training loader with the same settings, so every rank switches to
# cached batches at the same step, fixed up front (return_caches_after):
# their collectives stay in lockstep. On SIGUSR1 a rank writes its Python
# stacks to stacks-rR.txt beside headspace's FIFO (a rank that hangs is named
# by where it stands).

_rank = None        # this process's rank on the node; None: one process
_local_world = 0    # the ranks started on this node
_patched = False    # _patch_torch has run in this process
_stacks = []        # the file faulthandler writes the rank's stacks to, kept open


def _channel():
    """The events' channel: the descriptor headspace started this process
    with (HEADSPACE_HOOK_FD, taken out of the environment so that no child
    writes to whatever has that number in it), else headspace's FIFO by its
    path (a launcher's rank, a spawned rank)."""
    fd = os.environ.pop("HEADSPACE_HOOK_FD", None)
    if fd:
        return _Reporter(_event_fd(int(fd)))
    path = os.environ.get("HEADSPACE_HOOK_FIFO")
    if path and hasattr(os, "O_NONBLOCK"):
        try:
            # Non-blocking: headspace gone (no reader) fails at once
            # instead of waiting for one forever.
            f = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.set_blocking(f, True)
            return _Reporter(f)
        except OSError:
            os._exit(EXIT_REFUSED)
    return _Reporter(None)


def _as_rank(rank, world, local_world):
    """This process is rank `rank` of `world`, `local_world` of them on this
    node: its events are tagged, and it says so."""
    global _rank, _local_world
    _rank, _local_world = rank, local_world
    _reporter.tag = '{"r":%d,' % rank
    _reporter.send({"ev": "rank", "rank": rank, "world": world, "local_world": local_world, "pid": _host_pid()})
    if world > local_world:
        _refuse("ranks on more than one node (a world of %d ranks, %d on this node): headspace measures the ranks of one node this round" % (world, local_world))
    try:
        import faulthandler
        import signal
        if hasattr(signal, "SIGUSR1"):
            here = os.path.dirname(os.environ.get("HEADSPACE_HOOK_FIFO") or os.path.abspath(__file__))
            _stacks.append(open(os.path.join(here, "stacks-r%d.txt" % rank), "w"))
            faulthandler.register(signal.SIGUSR1, file=_stacks[-1], all_threads=True)
    except (OSError, ValueError, RuntimeError):
        pass


def _launched_rank():
    """A launcher's rank (torchrun sets LOCAL_RANK, WORLD_SIZE and
    LOCAL_WORLD_SIZE; a task of srun, which headspace runs with
    HEADSPACE_HOOK_RANKS=srun, has SLURM_PROCID, SLURM_STEP_NUM_TASKS and
    SLURM_STEP_NUM_NODES) says so; WORLD_SIZE above 1 with no launcher is
    refused: its process group would wait for ranks nobody starts."""
    env = os.environ
    if env.pop("HEADSPACE_HOOK_RANKS", "") == "srun":
        try:
            world = int(env.get("SLURM_STEP_NUM_TASKS") or env["SLURM_NTASKS"])
            nodes = int(env.get("SLURM_STEP_NUM_NODES") or env.get("SLURM_NNODES") or "1")
            _as_rank(int(env["SLURM_PROCID"]), world, world if nodes <= 1 else max(1, world // nodes))
        except (KeyError, ValueError):
            _refuse("srun's task: SLURM_PROCID %r, SLURM_STEP_NUM_TASKS %r: not numbers" % (env.get("SLURM_PROCID"), env.get("SLURM_STEP_NUM_TASKS")))
    elif "LOCAL_RANK" in env:
        try:
            world = int(env.get("WORLD_SIZE", "1"))
            _as_rank(int(env["LOCAL_RANK"]), world, int(env.get("LOCAL_WORLD_SIZE", world)))
        except ValueError:
            _refuse("LOCAL_RANK %r, WORLD_SIZE %r: not numbers" % (env.get("LOCAL_RANK"), env.get("WORLD_SIZE")))
    elif env.get("WORLD_SIZE", "1") not in ("", "1"):
        _refuse("WORLD_SIZE %s is set but no launcher started the ranks: run the command under torchrun (headspace analyze -- torchrun --nproc_per_node N SCRIPT)" % env["WORLD_SIZE"])


def _traceback_end():
    """Ends a raised rank's traceback with the line headspace waits for
    (exec_unix.go's tracebackEnd): a launcher may forward the output after
    the rank's event."""
    sys.stderr.write("headspace: the rank's traceback ends here\n")
    sys.stderr.flush()


def _run_rank(run):
    """Runs a rank's training; an exception is shown with its traceback and
    reported, naming the rank, and the rank exits 1."""
    try:
        run()
    except SystemExit as e:
        if e.code in (None, 0):
            raise
        _traceback_end()
        _reporter.send({"ev": "raised", "msg": "exit status %s" % e.code})
        raise
    except BaseException as e:
        import traceback
        traceback.print_exc()
        _traceback_end()
        _reporter.send({"ev": "raised", "msg": ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300]})
        os._exit(1)


def _rank_entry(i, fn, settings, nprocs, *args):
    """A rank started by torch.multiprocessing.spawn: fn(i, *args) under the
    hook, as rank i of nprocs."""
    global _settings, _reporter, _MAIN_PID, _state, _claimed, _loaders
    _MAIN_PID = os.getpid()
    _settings, _state, _claimed, _loaders = settings, None, False, {}
    _reporter = _channel()
    _as_rank(i, nprocs, nprocs)
    if _patched:  # forked from the hooked script: torch is patched already
        _reporter.send({"ev": "start", "python": sys.version.split()[0], "executable": sys.executable, "pid": os.getpid()})
    else:
        _patch_torch()
    _run_rank(lambda: fn(i, *args))
    _reporter.send({"ev": "end", "batches": _state.batches if _state is not None else 0})


_rank_entry.__module__ = "headspace_hook"  # pickled by reference into each spawned rank


def _patch_ranks():
    """torch.distributed.init_process_group and torch.multiprocessing's
    start_processes (under spawn), for ranks."""
    global _patched
    _patched = True
    try:
        import torch.distributed as dist
        orig_ipg = dist.init_process_group

        def init_process_group(*a, **kw):
            world = _world(a, kw)
            if _rank is None and world > 1:
                _refuse("init_process_group for %d ranks in a process no launcher started: run the command under torchrun, or start the ranks with torch.multiprocessing.spawn" % world)
            if _rank is not None and world > _local_world:
                _refuse("ranks on more than one node (a world of %d ranks, %d on this node): headspace measures the ranks of one node this round" % (world, _local_world))
            r = orig_ipg(*a, **kw)
            if _rank is not None:
                _reporter.send({"ev": "joined", "rank": dist.get_rank(), "world": dist.get_world_size()})
            return r
        dist.init_process_group = init_process_group
    except Exception:
        pass
    try:
        import torch.multiprocessing as tmp
        sp = sys.modules["torch.multiprocessing.spawn"]
        orig_sp = sp.start_processes

        def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
            if _rank is not None or os.getpid() != _MAIN_PID or _reporter.fd is None or _claimed:
                return orig_sp(fn, args, nprocs, join, daemon, start_method)
            _reporter.send({"ev": "ranks", "n": nprocs, "launcher": "torch.multiprocessing.spawn"})
            return orig_sp(_rank_entry, (fn, _settings, nprocs) + tuple(args), nprocs, join, daemon, start_method)
        sp.start_processes = start_processes
        tmp.start_processes = start_processes
    except Exception:
        pass



# ---------------------------------------------------------------------------
# Spawned DataLoader workers: a rank that torch.multiprocessing.spawn
# started inherits the spawn start method, so its loader's workers are
# fresh interpreters that get the dataset and the collate pickled. The
# loader is given a picklable worker_init_fn that, in each worker, opens
# headspace's FIFO (the rank's tag kept) and times the worker's own copy
# of the dataset as _instrument does in a forked one, and a picklable
# collate that times each batch and writes its stage event.

def _stage_event(c, cc):
    """A batch's stage event from this worker: its samples' times so far
    and the collate's (c, cc: wall and CPU); the counters start again."""
    info = _worker_info()
    s = _stage
    _reporter.raw('{"ev":"stage","w":%d,"n":%d,"getitem":%d,"load":%d,"transform":%d,"collate":%d,"cpu":%d,'
                  '"getitem_cpu":%d,"load_cpu":%d,"transform_cpu":%d,"collate_cpu":%d,"runq":%d}\n'
                  % (info.id if info is not None else -1, s["samples"], s["getitem"], s["load"], s["transform"], c, time.process_time_ns(),
                     s["getitem_cpu"], s["load_cpu"], s["transform_cpu"], cc, _runq()))
    for k in s:
        s[k] = 0


class _TimedCollate:
    """A loader's collate, timed in a spawned worker."""

    def __init__(self, orig):
        self.orig = orig

    def __call__(self, batch):
        t, tc = _perf(), _cpu()
        r = self.orig(batch)
        _stage_event(_perf() - t, _cpu() - tc)
        return r


class _WorkerInit:
    """A loader's worker_init_fn in a spawned worker: headspace's FIFO
    opened under the rank's tag, the worker's dataset timed, then the
    script's own worker_init_fn."""

    def __init__(self, orig, tag):
        self.orig, self.tag = orig, tag

    def __call__(self, worker_id):
        global _reporter, _MAIN_PID
        _MAIN_PID = None  # a worker that loses headspace stops reporting, nothing more
        if _reporter.fd is None:
            _reporter = _channel()
            _reporter.tag = self.tag
        info = _worker_info()
        if info is not None:
            class _Worker:
                pass
            w = _Worker()
            w.dataset, w.num_workers, w.multiprocessing_context, w.collate_fn = info.dataset, 0, None, None
            _instrument(w, "none")
        if self.orig is not None:
            self.orig(worker_id)


# Pickled by reference into each spawned worker.
_TimedCollate.__module__ = _WorkerInit.__module__ = "headspace_hook"


def _instrument_spawned(dl, measured):
    """Times dl's dataset and collate in its spawned workers (through the
    FIFO), where headspace's FIFO is there to reach; returns what it
    measures."""
    if _reporter.fd is None or not os.environ.get("HEADSPACE_HOOK_FIFO"):
        return measured
    ds = dl.dataset
    try:
        from torch.utils.data import IterableDataset
        measured["iterable"] = isinstance(ds, IterableDataset)
    except ImportError:
        pass
    measured["getitem"] = measured["iterable"] or getattr(type(ds), "__getitem__", None) is not None
    measured["split"] = callable(getattr(ds, "loader", None))
    try:
        dl.worker_init_fn = _WorkerInit(dl.worker_init_fn, _reporter.tag)
        dl.collate_fn = _TimedCollate(dl.collate_fn)
        measured["collate"] = True
    except (AttributeError, ValueError):
        measured["getitem"] = measured["split"] = False
    return measured


def _world(a, kw):
    """The number of processes init_process_group(*a, **kw) joins:
    world_size given, or taken from the init method's URL or from
    WORLD_SIZE (1 where none says)."""
    ws = kw.get("world_size", a[3] if len(a) > 3 else -1)
    if ws is None or int(ws) < 0:
        url = kw.get("init_method", a[1] if len(a) > 1 else None) or ""
        import re
        m = re.search(r"[?&]world_size=(\d+)", url)
        ws = m.group(1) if m else os.environ.get("WORLD_SIZE", "") or 1
    try:
        return int(ws)
    except (TypeError, ValueError):
        return 1


def _event_fd(fd):
    """The events' descriptor moved out of the script's way: duplicated to
    a high number (not inherited by what the script executes) and fd
    closed, so that a script that uses descriptor 3 for itself neither
    breaks the hook's events nor writes into them."""
    try:
        import fcntl
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 200)
    except (ImportError, OSError, AttributeError):
        return fd
    os.close(fd)
    return high


def _host_pid():
    """This process's id as headspace sees it, to signal it: where the
    command runs in a PID namespace of its own, os.getpid() is its number
    in there, while /proc (the host's mount) names the process by its
    number outside; os.getpid() where there is no /proc."""
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError, AttributeError):
        return os.getpid()


def _watchdog():
    """Where the command has no PID namespace of its own (Linux without
    user namespaces: its process id is the same inside and out), a forked process that
    watches headspace and, once it is gone (a SIGKILL included), kills
    every process of the run: those whose environment holds the run's
    mark (HEADSPACE_OWNLOOP_RUN). It holds none of the run's pipes, and
    goes with the command's process group when headspace ends the run."""
    mark, hs = os.environ.get("HEADSPACE_OWNLOOP_RUN"), os.environ.pop("HEADSPACE_PID", "")
    if not mark or not hs.isdigit() or not os.path.isdir("/proc/self") or _host_pid() != os.getpid() or not hasattr(os, "fork"):
        return
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        return
    try:
        os.closerange(0, 1 << 16)
        line = ("HEADSPACE_OWNLOOP_RUN=" + mark).encode()
        while True:
            time.sleep(0.5)
            try:
                os.kill(int(hs), 0)
                continue
            except PermissionError:
                continue
            except OSError:
                break
        me = os.getpid()
        for _ in range(3):
            for p in os.listdir("/proc"):
                if not p.isdigit() or int(p) == me:
                    continue
                try:
                    with open("/proc/%s/environ" % p, "rb") as f:
                        if line in f.read().split(b"\0"):
                            os.kill(int(p), 9)
                except OSError:
                    pass
    finally:
        os._exit(0)


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
    _reporter = _channel()
    # The training script sees neither the hook's settings nor its module.
    os.environ.pop("HEADSPACE_HOOK", None)
    _watchdog()
    _launched_rank()
    try:
        _patch_torch()
    except ImportError as e:
        _refuse("torch is not importable by %s: %s" % (sys.executable, e))
    import runpy
    sys.modules["headspace_hook"] = sys.modules[__name__]

    def run():
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
    if _rank is not None:
        _run_rank(run)
    else:
        run()
    _reporter.send({"ev": "end", "batches": _state.batches if _state is not None else 0})


if __name__ == "__main__":
    main(sys.argv[1:])
