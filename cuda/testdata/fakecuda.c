// fakecuda.c — a fake CUDA driver for the tests of package cuda, built by
// the tests with the machine's cc into a shared library and loaded through
// the same purego path as libcuda.so.1. It is never built into headspace
// and no command can select it.
//
// Memory is malloc, copies are memcpy, launches are recorded with their
// parameters (their sizes read from the PTX's .entry signatures) and run
// nothing. Time is a model: each stream has a clock; a launch takes 1 ms, a
// copy 1 ns a byte from pinned memory and 2 from pageable; waiting on an
// event moves a stream's clock to the event's. Every operation is written
// to a text log the tests read (fake_log). Calls that need a context fail
// with CUDA_ERROR_INVALID_CONTEXT on a thread where none is current, which
// proves the binding's calls stay on its driver thread.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
	OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201, INVALID_PTX = 218, INVALID_HANDLE = 400, NOT_FOUND = 500, NOT_READY = 600,
};

enum { MAGIC_STREAM = 0x5743, MAGIC_EVENT = 0x4556, MAGIC_MODULE = 0x4d4f, MAGIC_FUNC = 0x4655,
       MAGIC_GRAPH = 0x4752, MAGIC_GEXEC = 0x4745 };

struct graph;
// cap is the graph a stream is capturing into (cuStreamBeginCapture), or 0.
struct stream { int magic, id; double clock; struct graph *cap; };
// A captured launch keeps its parameters' values as they were at capture,
// as the driver does: a later change to the arrays they came from does not
// reach the graph.
struct gnode { struct func *f; unsigned g[3], b[3], shared; unsigned long long vals[64]; };
struct graph { int magic, n; struct gnode *nodes; };
struct event { int magic, id, recorded; double time; };
struct func { int magic; char name[128]; int nparams; int sizes[64]; };
struct module { int magic; int nfuncs; struct func funcs[64]; };

static int initialized, ctx_refs, next_id = 1;
static long ctx_retains; // every cuDevicePrimaryCtxRetain that succeeded, ever
static __thread int ctx_current;
static long live_dev, live_host, live_streams, live_events, live_modules, live_graphs;
static size_t dev_bytes, mem_limit = (size_t)1 << 40;
static struct stream null_stream = {MAGIC_STREAM, 0, 0};

// host allocations from cuMemHostAlloc, to tell pinned copies from pageable
#define MAXHOST 256
static void *host_ptrs[MAXHOST];
static size_t host_sizes[MAXHOST];

// the operation log
static char *logbuf;
static size_t loglen, logcap;

static void logf_(const char *fmt, ...) {
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(logbuf ? logbuf + loglen : NULL, logbuf ? logcap - loglen : 0, fmt, ap);
		va_end(ap);
		if (logbuf && loglen + n < logcap) { loglen += n; return; }
		logcap = logcap ? 2 * logcap + (size_t)n : 4096 + (size_t)n;
		logbuf = realloc(logbuf, logcap);
	}
}

// error injection: call `fail_call` fails with fail_code after fail_after
// more successful calls.
static char fail_call[64];
static int fail_after, fail_code;

static int inject(const char *call) {
	if (fail_code && strcmp(call, fail_call) == 0) {
		if (fail_after-- == 0) {
			int c = fail_code;
			fail_code = 0;
			logf_("fail %s %d\n", call, c);
			return c;
		}
	}
	return OK;
}

#define ENTER(name)                                  \
	do {                                             \
		int e_ = inject(name);                       \
		if (e_) return e_;                           \
		if (!initialized) return NOT_INITIALIZED;    \
	} while (0)
#define NEEDCTX() do { if (!ctx_current) return INVALID_CONTEXT; } while (0)

// ---- the test's controls ----

void fake_reset(void) {
	loglen = 0;
	if (logbuf) logbuf[0] = 0;
	fail_code = 0;
	mem_limit = (size_t)1 << 40;
	null_stream.clock = 0;
}
void fake_fail(const char *call, int after, int code) {
	snprintf(fail_call, sizeof fail_call, "%s", call);
	fail_after = after;
	fail_code = code;
}
void fake_set_mem_limit(size_t n) { mem_limit = n; }
// A driver that never returns from cuInit (a wedged GPU): while hang_init
// is set, cuInit waits. The tests in this process set and clear it with
// fake_hang_init; a test of a whole program sets FAKECUDA_HANG_INIT in its
// environment to a file's path, and cuInit creates that file (to say it has
// been reached) and then never returns.
static volatile int hang_init;
void fake_hang_init(int on) { hang_init = on; }
long fake_ctx_retains(void) { return ctx_retains; }
// fake_forget_live zeroes the live counts, after a test that made a
// release call fail on purpose (what it held is leaked, as on a GPU).
void fake_forget_live(void) { live_dev = live_host = live_streams = live_events = live_modules = live_graphs = 0; ctx_refs = 0; dev_bytes = 0; }
void fake_log(const char **out) { *out = logbuf ? logbuf : ""; }
long fake_live(void) { return live_dev + live_host + live_streams + live_events + live_modules + live_graphs + ctx_refs; }
void fake_live_detail(const char **out) {
	static char s[256];
	snprintf(s, sizeof s, "%ld device allocations, %ld host allocations, %ld streams, %ld events, %ld modules, %ld graphs, %d context references",
		live_dev, live_host, live_streams, live_events, live_modules, live_graphs, ctx_refs);
	*out = s;
}

// ---- the driver API ----

CUresult cuGetErrorName(CUresult r, const char **s) {
	static const struct { int code; const char *name; } names[] = {
		{OK, "CUDA_SUCCESS"}, {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"}, {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
		{NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"}, {100, "CUDA_ERROR_NO_DEVICE"}, {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
		{INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"}, {INVALID_PTX, "CUDA_ERROR_INVALID_PTX"}, {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
		{NOT_FOUND, "CUDA_ERROR_NOT_FOUND"}, {NOT_READY, "CUDA_ERROR_NOT_READY"}, {700, "CUDA_ERROR_ILLEGAL_ADDRESS"}, {719, "CUDA_ERROR_LAUNCH_FAILED"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (names[i].code == r) { *s = names[i].name; return OK; }
	}
	*s = NULL;
	return INVALID_VALUE;
}

CUresult cuInit(unsigned flags) {
	const char *hang = getenv("FAKECUDA_HANG_INIT");
	if (hang && *hang) {
		FILE *f = fopen(hang, "w");
		if (f) fclose(f);
		for (;;) sleep(1000);
	}
	while (hang_init) usleep(1000);
	int e = inject("cuInit");
	if (e) return e;
	if (flags != 0) return INVALID_VALUE;
	initialized = 1;
	return OK;
}
CUresult cuDriverGetVersion(int *v) { ENTER("cuDriverGetVersion"); *v = 12040; return OK; }
CUresult cuDeviceGetCount(int *n) { ENTER("cuDeviceGetCount"); *n = 1; return OK; }
CUresult cuDeviceGet(int *d, int ordinal) {
	ENTER("cuDeviceGet");
	if (ordinal != 0) return INVALID_DEVICE;
	*d = 0;
	return OK;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
	ENTER("cuDeviceGetName");
	if (dev != 0) return INVALID_DEVICE;
	snprintf(name, len, "Fake GPU (testdata/fakecuda.c)");
	return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
	ENTER("cuDeviceGetAttribute");
	if (dev != 0) return INVALID_DEVICE;
	switch (attr) {
	case 16: *v = 132; break;       // multiprocessors
	case 33: *v = 0x65; break;      // PCI bus
	case 34: *v = 0; break;         // PCI device
	case 50: *v = 0; break;         // PCI domain
	case 75: *v = 9; break;         // compute capability major
	case 76: *v = 0; break;         // minor
	default: return INVALID_VALUE;
	}
	return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *n, int dev) { ENTER("cuDeviceTotalMem_v2"); *n = (size_t)80 << 30; return OK; }
CUresult cuDevicePrimaryCtxRetain(uintptr_t *ctx, int dev) {
	ENTER("cuDevicePrimaryCtxRetain");
	if (dev != 0) return INVALID_DEVICE;
	ctx_refs++;
	ctx_retains++;
	*ctx = 0xc0;
	return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
	ENTER("cuDevicePrimaryCtxRelease_v2");
	if (ctx_refs == 0) return INVALID_CONTEXT;
	ctx_refs--;
	return OK;
}
CUresult cuCtxSetCurrent(uintptr_t ctx) {
	ENTER("cuCtxSetCurrent");
	if (ctx != 0 && ctx != 0xc0) return INVALID_CONTEXT;
	ctx_current = ctx != 0;
	return OK;
}
CUresult cuCtxSynchronize(void) { ENTER("cuCtxSynchronize"); NEEDCTX(); logf_("ctxsync\n"); return OK; }

// device allocations carry their size in a header
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	ENTER("cuMemAlloc_v2");
	NEEDCTX();
	if (n == 0) return INVALID_VALUE;
	if (dev_bytes + n > mem_limit) return OUT_OF_MEMORY;
	size_t *h = malloc(n + 16);
	if (!h) return OUT_OF_MEMORY;
	h[0] = n;
	dev_bytes += n;
	live_dev++;
	*p = (CUdeviceptr)(uintptr_t)(h + 2);
	logf_("alloc %zu\n", n);
	return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	ENTER("cuMemFree_v2");
	NEEDCTX();
	if (!p) return INVALID_VALUE;
	size_t *h = (size_t *)(uintptr_t)p - 2;
	dev_bytes -= h[0];
	logf_("free %zu\n", h[0]);
	free(h);
	live_dev--;
	return OK;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
	ENTER("cuMemHostAlloc");
	NEEDCTX();
	for (int i = 0; i < MAXHOST; i++) {
		if (!host_ptrs[i]) {
			host_ptrs[i] = *p = malloc(n);
			host_sizes[i] = n;
			live_host++;
			logf_("hostalloc %zu\n", n);
			return OK;
		}
	}
	return OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) {
	ENTER("cuMemFreeHost");
	NEEDCTX();
	for (int i = 0; i < MAXHOST; i++) {
		if (host_ptrs[i] == p && p) {
			free(p);
			host_ptrs[i] = NULL;
			live_host--;
			logf_("hostfree %zu\n", host_sizes[i]);
			return OK;
		}
	}
	return INVALID_VALUE;
}
static int pinned(const void *p, size_t n) {
	for (int i = 0; i < MAXHOST; i++) {
		char *b = host_ptrs[i];
		if (b && (const char *)p >= b && (const char *)p + n <= b + host_sizes[i]) return 1;
	}
	return 0;
}
static struct stream *stream_of(uintptr_t s) {
	struct stream *st = s ? (struct stream *)s : &null_stream;
	return st->magic == MAGIC_STREAM ? st : NULL;
}
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
	ENTER("cuMemsetD8_v2");
	NEEDCTX();
	memset((void *)(uintptr_t)p, v, n);
	logf_("memset %zu\n", n);
	return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, uintptr_t s) {
	ENTER("cuMemcpyHtoDAsync_v2");
	NEEDCTX();
	struct stream *st = stream_of(s);
	if (!st) return INVALID_HANDLE;
	int pin = pinned(src, n);
	memcpy((void *)(uintptr_t)dst, src, n);
	double t0 = st->clock;
	st->clock += n * (pin ? 1e-6 : 2e-6);
	logf_("htod stream=%d bytes=%zu pinned=%d t=%.6f-%.6f\n", st->id, n, pin, t0, st->clock);
	return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, uintptr_t s) {
	ENTER("cuMemcpyDtoHAsync_v2");
	NEEDCTX();
	struct stream *st = stream_of(s);
	if (!st) return INVALID_HANDLE;
	int pin = pinned(dst, n);
	memcpy(dst, (void *)(uintptr_t)src, n);
	double t0 = st->clock;
	st->clock += n * (pin ? 1e-6 : 2e-6);
	logf_("dtoh stream=%d bytes=%zu pinned=%d t=%.6f-%.6f\n", st->id, n, pin, t0, st->clock);
	return OK;
}
CUresult cuStreamCreate(uintptr_t *s, unsigned flags) {
	ENTER("cuStreamCreate");
	NEEDCTX();
	struct stream *st = calloc(1, sizeof *st);
	st->magic = MAGIC_STREAM;
	st->id = next_id++;
	live_streams++;
	*s = (uintptr_t)st;
	logf_("stream %d flags=%u\n", st->id, flags);
	return OK;
}
CUresult cuStreamDestroy_v2(uintptr_t s) {
	ENTER("cuStreamDestroy_v2");
	NEEDCTX();
	struct stream *st = (struct stream *)s;
	if (!s || st->magic != MAGIC_STREAM) return INVALID_HANDLE;
	st->magic = 0;
	free(st);
	live_streams--;
	return OK;
}
CUresult cuStreamSynchronize(uintptr_t s) {
	ENTER("cuStreamSynchronize");
	NEEDCTX();
	struct stream *st = stream_of(s);
	if (!st) return INVALID_HANDLE;
	logf_("streamsync stream=%d\n", st->id);
	return OK;
}
CUresult cuEventCreate(uintptr_t *e, unsigned flags) {
	ENTER("cuEventCreate");
	NEEDCTX();
	if (flags & ~7u) return INVALID_VALUE; // DEFAULT, BLOCKING_SYNC, DISABLE_TIMING, INTERPROCESS
	if (flags & 2) return INVALID_VALUE;   // the binding times with every event it makes
	struct event *ev = calloc(1, sizeof *ev);
	ev->magic = MAGIC_EVENT;
	ev->id = next_id++;
	live_events++;
	*e = (uintptr_t)ev;
	return OK;
}
static struct event *event_of(uintptr_t e) {
	struct event *ev = (struct event *)e;
	return e && ev->magic == MAGIC_EVENT ? ev : NULL;
}
CUresult cuEventDestroy_v2(uintptr_t e) {
	ENTER("cuEventDestroy_v2");
	NEEDCTX();
	struct event *ev = event_of(e);
	if (!ev) return INVALID_HANDLE;
	ev->magic = 0;
	free(ev);
	live_events--;
	return OK;
}
CUresult cuEventRecord(uintptr_t e, uintptr_t s) {
	ENTER("cuEventRecord");
	NEEDCTX();
	struct event *ev = event_of(e);
	struct stream *st = stream_of(s);
	if (!ev || !st) return INVALID_HANDLE;
	ev->recorded = 1;
	ev->time = st->clock;
	logf_("record event=%d stream=%d t=%.6f\n", ev->id, st->id, st->clock);
	return OK;
}
CUresult cuStreamWaitEvent(uintptr_t s, uintptr_t e, unsigned flags) {
	ENTER("cuStreamWaitEvent");
	NEEDCTX();
	struct event *ev = event_of(e);
	struct stream *st = stream_of(s);
	if (!ev || !st || flags != 0) return INVALID_HANDLE;
	if (ev->recorded && ev->time > st->clock) st->clock = ev->time;
	logf_("wait stream=%d event=%d t=%.6f\n", st->id, ev->id, st->clock);
	return OK;
}
CUresult cuEventSynchronize(uintptr_t e) {
	ENTER("cuEventSynchronize");
	NEEDCTX();
	struct event *ev = event_of(e);
	if (!ev) return INVALID_HANDLE;
	logf_("eventsync event=%d\n", ev->id);
	return OK;
}
CUresult cuEventQuery(uintptr_t e) {
	ENTER("cuEventQuery");
	NEEDCTX();
	return event_of(e) ? OK : INVALID_HANDLE;
}
CUresult cuEventElapsedTime(float *ms, uintptr_t a, uintptr_t b) {
	ENTER("cuEventElapsedTime");
	NEEDCTX();
	struct event *x = event_of(a), *y = event_of(b);
	if (!x || !y) return INVALID_HANDLE;
	if (!x->recorded || !y->recorded) return NOT_READY;
	*ms = (float)(y->time - x->time);
	return OK;
}

// parse the .entry signatures of a PTX text
static int parse_ptx(const char *ptx, struct module *m, char *log, size_t logsize) {
	if (!strstr(ptx, ".version") || !strstr(ptx, ".target")) {
		snprintf(log, logsize, "ptxas fatal   : the input has no .version and .target directives");
		return INVALID_PTX;
	}
	const char *bad = strstr(ptx, "@bad");
	if (bad) {
		int line = 1;
		for (const char *c = ptx; c < bad; c++) line += *c == '\n';
		snprintf(log, logsize, "ptxas application ptx input, line %d; error   : Unknown symbol '@bad'", line);
		return INVALID_PTX;
	}
	for (const char *p = ptx; (p = strstr(p, ".entry")) != NULL;) {
		p += 6;
		while (*p == ' ' || *p == '\t') p++;
		struct func *f = &m->funcs[m->nfuncs++];
		f->magic = MAGIC_FUNC;
		size_t n = strcspn(p, " \t\n(");
		snprintf(f->name, sizeof f->name, "%.*s", (int)n, p);
		const char *end = strchr(p, ')');
		for (const char *q = p; (q = strstr(q, ".param")) != NULL && (!end || q < end); q += 6) {
			const char *t = q + 6;
			while (*t == ' ') t++;
			f->sizes[f->nparams++] = strncmp(t + 2, "64", 2) == 0 ? 8 : 4;
		}
	}
	return OK;
}

CUresult cuModuleLoadDataEx(uintptr_t *mod, const void *image, unsigned n, int *opts, void **vals) {
	ENTER("cuModuleLoadDataEx");
	NEEDCTX();
	char *log = NULL;
	size_t logsize = 0;
	for (unsigned i = 0; i < n; i++) {
		if (opts[i] == 5) log = vals[i];
		if (opts[i] == 6) logsize = (size_t)(uintptr_t)vals[i];
	}
	char scratch[256];
	if (!log || !logsize) log = scratch, logsize = sizeof scratch;
	struct module *m = calloc(1, sizeof *m);
	m->magic = MAGIC_MODULE;
	int r = parse_ptx(image, m, log, logsize);
	if (r) { free(m); return r; }
	live_modules++;
	*mod = (uintptr_t)m;
	logf_("module %d kernels\n", m->nfuncs);
	return OK;
}
CUresult cuModuleUnload(uintptr_t mod) {
	ENTER("cuModuleUnload");
	NEEDCTX();
	struct module *m = (struct module *)mod;
	if (!mod || m->magic != MAGIC_MODULE) return INVALID_HANDLE;
	m->magic = 0;
	free(m);
	live_modules--;
	return OK;
}
CUresult cuModuleGetFunction(uintptr_t *f, uintptr_t mod, const char *name) {
	ENTER("cuModuleGetFunction");
	NEEDCTX();
	struct module *m = (struct module *)mod;
	if (!mod || m->magic != MAGIC_MODULE) return INVALID_HANDLE;
	for (int i = 0; i < m->nfuncs; i++) {
		if (strcmp(m->funcs[i].name, name) == 0) { *f = (uintptr_t)&m->funcs[i]; return OK; }
	}
	return NOT_FOUND;
}
CUresult cuLaunchKernel(uintptr_t fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, uintptr_t s, void **params, void **extra) {
	ENTER("cuLaunchKernel");
	NEEDCTX();
	struct func *f = (struct func *)fn;
	struct stream *st = stream_of(s);
	if (!fn || f->magic != MAGIC_FUNC || !st) return INVALID_HANDLE;
	if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long)bx * by * bz > 1024 || extra) return INVALID_VALUE;
	if (f->nparams && !params) return INVALID_VALUE;
	if (st->cap) {
		struct graph *g = st->cap;
		g->nodes = realloc(g->nodes, (size_t)(g->n + 1) * sizeof *g->nodes);
		struct gnode *nd = &g->nodes[g->n++];
		memset(nd, 0, sizeof *nd);
		nd->f = f;
		nd->g[0] = gx, nd->g[1] = gy, nd->g[2] = gz, nd->b[0] = bx, nd->b[1] = by, nd->b[2] = bz, nd->shared = shared;
		for (int i = 0; i < f->nparams; i++) memcpy(&nd->vals[i], params[i], f->sizes[i]);
		logf_("capture %s stream=%d\n", f->name, st->id);
		return OK;
	}
	double t0 = st->clock;
	st->clock += 1.0;
	logf_("launch %s stream=%d grid=%u,%u,%u block=%u,%u,%u shared=%u t=%.6f-%.6f params=", f->name, st->id, gx, gy, gz, bx, by, bz, shared, t0, st->clock);
	for (int i = 0; i < f->nparams; i++) {
		unsigned long long v = 0;
		memcpy(&v, params[i], f->sizes[i]);
		logf_("%s%d:%llx", i ? "," : "", f->sizes[i], v);
	}
	logf_("\n");
	return OK;
}

// ---- CUDA Graphs: stream capture, instantiation, replay ----

CUresult cuStreamBeginCapture_v2(uintptr_t s, int mode) {
	ENTER("cuStreamBeginCapture_v2");
	NEEDCTX();
	struct stream *st = stream_of(s);
	if (!st || st == &null_stream || mode < 0 || mode > 2) return INVALID_VALUE;
	if (st->cap) return INVALID_VALUE; /* already capturing */
	st->cap = calloc(1, sizeof *st->cap);
	st->cap->magic = MAGIC_GRAPH;
	live_graphs++;
	logf_("capture-begin stream=%d mode=%d\n", st->id, mode);
	return OK;
}
CUresult cuStreamEndCapture(uintptr_t s, uintptr_t *graph) {
	NEEDCTX();
	struct stream *st = stream_of(s);
	if (!st || !graph) return INVALID_VALUE;
	if (!st->cap) return INVALID_VALUE; /* CUDA_ERROR_ILLEGAL_STATE in the driver */
	int e = inject("cuStreamEndCapture");
	if (e) {
		/* as the driver does when a capture fails: it ends, with no graph */
		free(st->cap->nodes);
		free(st->cap);
		st->cap = 0;
		live_graphs--;
		*graph = 0;
		return e;
	}
	*graph = (uintptr_t)st->cap;
	logf_("capture-end stream=%d nodes=%d\n", st->id, st->cap->n);
	st->cap = 0;
	return OK;
}
CUresult cuGraphInstantiateWithFlags(uintptr_t *exec, uintptr_t graph, unsigned long long flags) {
	ENTER("cuGraphInstantiateWithFlags");
	NEEDCTX();
	struct graph *g = (struct graph *)graph;
	if (!exec || !g || g->magic != MAGIC_GRAPH || flags) return INVALID_VALUE;
	struct graph *e = calloc(1, sizeof *e);
	e->magic = MAGIC_GEXEC;
	e->n = g->n;
	e->nodes = malloc((size_t)(g->n ? g->n : 1) * sizeof *e->nodes);
	memcpy(e->nodes, g->nodes, (size_t)g->n * sizeof *e->nodes);
	live_graphs++;
	*exec = (uintptr_t)e;
	logf_("graph-instantiate nodes=%d\n", e->n);
	return OK;
}
CUresult cuGraphLaunch(uintptr_t exec, uintptr_t s) {
	ENTER("cuGraphLaunch");
	NEEDCTX();
	struct graph *e = (struct graph *)exec;
	struct stream *st = stream_of(s);
	if (!e || e->magic != MAGIC_GEXEC || !st) return INVALID_HANDLE;
	if (st->cap) return INVALID_VALUE;
	for (int k = 0; k < e->n; k++) {
		struct gnode *nd = &e->nodes[k];
		double t0 = st->clock;
		st->clock += 1.0;
		logf_("launch %s stream=%d grid=%u,%u,%u block=%u,%u,%u shared=%u t=%.6f-%.6f graph=1 params=", nd->f->name, st->id,
			nd->g[0], nd->g[1], nd->g[2], nd->b[0], nd->b[1], nd->b[2], nd->shared, t0, st->clock);
		for (int i = 0; i < nd->f->nparams; i++) logf_("%s%d:%llx", i ? "," : "", nd->f->sizes[i], nd->vals[i]);
		logf_("\n");
	}
	return OK;
}
static CUresult graph_free(uintptr_t p, int magic) {
	struct graph *g = (struct graph *)p;
	if (!g || g->magic != magic) return INVALID_HANDLE;
	g->magic = 0;
	free(g->nodes);
	free(g);
	live_graphs--;
	return OK;
}
CUresult cuGraphExecDestroy(uintptr_t exec) {
	ENTER("cuGraphExecDestroy");
	NEEDCTX();
	return graph_free(exec, MAGIC_GEXEC);
}
CUresult cuGraphDestroy(uintptr_t graph) {
	ENTER("cuGraphDestroy");
	NEEDCTX();
	return graph_free(graph, MAGIC_GRAPH);
}
