// fakednn.c — a fake libcudnn and libcublas for the tests of package cuda,
// built by them with the machine's cc and loaded through the same purego
// path as the real libraries (one file holds both sets of entry points; a
// test opens it as each). It is never built into headspace and no command
// selects it (only a test passes its path). It computes nothing: never a
// source of figures.
//
// It checks its handles and descriptors (magic numbers, set before use),
// records every call that matters in a log ("name arg arg …\n", read by
// fake_dnn_log), counts live objects (fake_dnn_live) and fails the
// after+1-th next call of a name with a status (fake_dnn_fail). Its
// algorithm search returns three results, the fastest first: algorithm 1
// (needing 4096 bytes of workspace), 0 (none) and 2 (a failed one).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OK = 0, NOT_INITIALIZED = 1, BAD_PARAM = 3 };
enum { M_HANDLE = 0x444e, M_TENSOR = 0x5445, M_FILTER = 0x4649, M_CONV = 0x434f, M_BLAS = 0x424c };

struct obj { int magic, set; int v[8]; void *stream; int math; };

static char logbuf[1 << 16];
static size_t loglen;
static long live;
static char failname[64];
static int failafter = -1, failcode;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void logf_(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(logbuf + loglen, sizeof logbuf - loglen, fmt, ap);
	va_end(ap);
	if (n > 0 && loglen + n < sizeof logbuf) loglen += n;
}

// fails reports whether the call name is to fail now.
static int fails(const char *name) {
	if (failafter < 0 || strcmp(name, failname) != 0) return 0;
	if (failafter-- > 0) return 0;
	failafter = -1;
	return 1;
}

void fake_dnn_reset(void) { loglen = 0; logbuf[0] = 0; failafter = -1; }
void fake_dnn_log(const char **p) { *p = logbuf; }
long fake_dnn_live(void) { return live; }
void fake_dnn_fail(const char *name, int after, int code) {
	snprintf(failname, sizeof failname, "%s", name);
	failafter = after, failcode = code;
}

static int make(struct obj **o, int magic) {
	if (!o) return BAD_PARAM;
	*o = calloc(1, sizeof **o);
	(*o)->magic = magic;
	live++;
	return OK;
}

static int drop(struct obj *o, int magic) {
	if (!o || o->magic != magic) return BAD_PARAM;
	o->magic = 0;
	free(o);
	live--;
	return OK;
}

static int ok(struct obj *o, int magic) { return o && o->magic == magic && (magic == M_HANDLE || magic == M_BLAS || o->set); }

#define FAIL(name) if (fails(name)) return failcode

/* cuDNN */

size_t cudnnGetVersion(void) { return 90100; }

const char *cudnnGetErrorString(int s) {
	switch (s) {
	case 0: return "CUDNN_STATUS_SUCCESS";
	case 1001: return "CUDNN_STATUS_NOT_INITIALIZED";
	case 2000: return "CUDNN_STATUS_BAD_PARAM";
	case 3000: return "CUDNN_STATUS_NOT_SUPPORTED";
	case 4000: return "CUDNN_STATUS_INTERNAL_ERROR";
	case 4001: return "CUDNN_STATUS_ALLOC_FAILED";
	}
	return "CUDNN_STATUS_UNKNOWN";
}

int cudnnCreate(struct obj **h) { FAIL("cudnnCreate"); logf_("cudnnCreate\n"); return make(h, M_HANDLE); }
int cudnnDestroy(struct obj *h) { logf_("cudnnDestroy\n"); return drop(h, M_HANDLE); }
int cudnnSetStream(struct obj *h, void *s) {
	FAIL("cudnnSetStream");
	if (!ok(h, M_HANDLE)) return BAD_PARAM;
	h->stream = s;
	logf_("cudnnSetStream\n");
	return OK;
}

int cudnnCreateTensorDescriptor(struct obj **d) { FAIL("cudnnCreateTensorDescriptor"); return make(d, M_TENSOR); }
int cudnnDestroyTensorDescriptor(struct obj *d) { return drop(d, M_TENSOR); }
int cudnnSetTensor4dDescriptor(struct obj *d, int format, int dtype, int n, int c, int h, int w) {
	FAIL("cudnnSetTensor4dDescriptor");
	if (!d || d->magic != M_TENSOR || n <= 0 || c <= 0 || h <= 0 || w <= 0 || dtype != 0 || format != 0) return BAD_PARAM;
	d->set = 1, d->v[0] = n, d->v[1] = c, d->v[2] = h, d->v[3] = w;
	logf_("cudnnSetTensor4dDescriptor %d %d %d %d\n", n, c, h, w);
	return OK;
}

int cudnnCreateFilterDescriptor(struct obj **d) { FAIL("cudnnCreateFilterDescriptor"); return make(d, M_FILTER); }
int cudnnDestroyFilterDescriptor(struct obj *d) { return drop(d, M_FILTER); }
int cudnnSetFilter4dDescriptor(struct obj *d, int dtype, int format, int k, int c, int h, int w) {
	FAIL("cudnnSetFilter4dDescriptor");
	if (!d || d->magic != M_FILTER || k <= 0 || c <= 0 || h <= 0 || w <= 0 || dtype != 0 || format != 0) return BAD_PARAM;
	d->set = 1, d->v[0] = k, d->v[1] = c, d->v[2] = h, d->v[3] = w;
	logf_("cudnnSetFilter4dDescriptor %d %d %d %d\n", k, c, h, w);
	return OK;
}

int cudnnCreateConvolutionDescriptor(struct obj **d) { FAIL("cudnnCreateConvolutionDescriptor"); return make(d, M_CONV); }
int cudnnDestroyConvolutionDescriptor(struct obj *d) { return drop(d, M_CONV); }
int cudnnSetConvolution2dDescriptor(struct obj *d, int ph, int pw, int u, int v, int dh, int dw, int mode, int ctype) {
	FAIL("cudnnSetConvolution2dDescriptor");
	if (!d || d->magic != M_CONV || u <= 0 || v <= 0 || dh <= 0 || dw <= 0 || ph < 0 || pw < 0) return BAD_PARAM;
	d->set = 1, d->v[0] = ph, d->v[1] = pw, d->v[2] = mode, d->v[3] = ctype;
	logf_("cudnnSetConvolution2dDescriptor pad %d %d stride %d %d mode %d compute %d\n", ph, pw, u, v, mode, ctype);
	return OK;
}
int cudnnSetConvolutionMathType(struct obj *d, int math) {
	FAIL("cudnnSetConvolutionMathType");
	if (!ok(d, M_CONV) || math < 0 || math > 3) return BAD_PARAM;
	d->math = math;
	logf_("cudnnSetConvolutionMathType %d\n", math);
	return OK;
}

// The perf results of the three searches share one layout.
typedef struct { int algo, status; float time; size_t memory; int determinism, mathType; int reserved[3]; } perf;

static int find(const char *name, struct obj *h, struct obj *a, struct obj *b, struct obj *conv, struct obj *c, int requested, int *returned, perf *out) {
	if (fails(name)) return failcode;
	if (!ok(h, M_HANDLE) || !ok(conv, M_CONV) || !a || !b || !c || !a->set || !b->set || !c->set || requested <= 0 || !returned || !out) return BAD_PARAM;
	perf r[3] = {{1, 0, 0.5f, 4096, 1, conv->math, {0}}, {0, 0, 0.9f, 0, 1, conv->math, {0}}, {2, 3000, -1, 0, 0, 0, {0}}};
	int n = requested < 3 ? requested : 3;
	memcpy(out, r, n * sizeof r[0]);
	*returned = n;
	logf_("%s math %d\n", name, conv->math);
	return OK;
}

int cudnnFindConvolutionForwardAlgorithm(struct obj *h, struct obj *x, struct obj *w, struct obj *conv, struct obj *y, int req, int *ret, perf *out) {
	return find("cudnnFindConvolutionForwardAlgorithm", h, x, w, conv, y, req, ret, out);
}
int cudnnFindConvolutionBackwardDataAlgorithm(struct obj *h, struct obj *w, struct obj *dy, struct obj *conv, struct obj *dx, int req, int *ret, perf *out) {
	return find("cudnnFindConvolutionBackwardDataAlgorithm", h, w, dy, conv, dx, req, ret, out);
}
int cudnnFindConvolutionBackwardFilterAlgorithm(struct obj *h, struct obj *x, struct obj *dy, struct obj *conv, struct obj *dw, int req, int *ret, perf *out) {
	return find("cudnnFindConvolutionBackwardFilterAlgorithm", h, x, dy, conv, dw, req, ret, out);
}

static int run(const char *name, struct obj *h, const float *alpha, struct obj *a, struct obj *b, struct obj *conv, int algo, void *ws, size_t wsSize, const float *beta, struct obj *c) {
	if (fails(name)) return failcode;
	if (!ok(h, M_HANDLE) || !ok(conv, M_CONV) || !alpha || !beta || !a || !b || !c || !a->set || !b->set || !c->set) return BAD_PARAM;
	if (algo == 1 && (!ws || wsSize < 4096)) return BAD_PARAM;
	logf_("%s algo %d workspace %zu alpha %g beta %g stream %s\n", name, algo, wsSize, *alpha, *beta, h->stream ? "set" : "default");
	return OK;
}

int cudnnConvolutionForward(struct obj *h, const float *alpha, struct obj *xD, void *x, struct obj *wD, void *w, struct obj *conv, int algo, void *ws, size_t wsSize, const float *beta, struct obj *yD, void *y) {
	(void)x, (void)w, (void)y;
	return run("cudnnConvolutionForward", h, alpha, xD, wD, conv, algo, ws, wsSize, beta, yD);
}
int cudnnConvolutionBackwardData(struct obj *h, const float *alpha, struct obj *wD, void *w, struct obj *dyD, void *dy, struct obj *conv, int algo, void *ws, size_t wsSize, const float *beta, struct obj *dxD, void *dx) {
	(void)w, (void)dy, (void)dx;
	return run("cudnnConvolutionBackwardData", h, alpha, wD, dyD, conv, algo, ws, wsSize, beta, dxD);
}
int cudnnConvolutionBackwardFilter(struct obj *h, const float *alpha, struct obj *xD, void *x, struct obj *dyD, void *dy, struct obj *conv, int algo, void *ws, size_t wsSize, const float *beta, struct obj *dwD, void *dw) {
	(void)x, (void)dy, (void)dw;
	return run("cudnnConvolutionBackwardFilter", h, alpha, xD, dyD, conv, algo, ws, wsSize, beta, dwD);
}

/* cuBLAS */

const char *cublasGetStatusString(int s) {
	switch (s) {
	case 0: return "CUBLAS_STATUS_SUCCESS";
	case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
	case 7: return "CUBLAS_STATUS_INVALID_VALUE";
	case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
	}
	return "CUBLAS_STATUS_UNKNOWN";
}

int cublasCreate_v2(struct obj **h) { FAIL("cublasCreate_v2"); logf_("cublasCreate_v2\n"); return make(h, M_BLAS); }
int cublasDestroy_v2(struct obj *h) { logf_("cublasDestroy_v2\n"); return drop(h, M_BLAS) ? 7 : 0; }
int cublasGetVersion_v2(struct obj *h, int *v) {
	if (!ok(h, M_BLAS) || !v) return 7;
	*v = 130100;
	return 0;
}
int cublasSetStream_v2(struct obj *h, void *s) {
	FAIL("cublasSetStream_v2");
	if (!ok(h, M_BLAS)) return 7;
	h->stream = s;
	logf_("cublasSetStream_v2\n");
	return 0;
}
int cublasSetMathMode(struct obj *h, int mode) {
	FAIL("cublasSetMathMode");
	if (!ok(h, M_BLAS)) return 7;
	h->math = mode;
	logf_("cublasSetMathMode %d\n", mode);
	return 0;
}
int cublasSgemm_v2(struct obj *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc) {
	(void)a, (void)b, (void)c;
	FAIL("cublasSgemm_v2");
	if (!ok(h, M_BLAS) || !alpha || !beta || m <= 0 || n <= 0 || k <= 0 || lda <= 0 || ldb <= 0 || ldc < m) return 7;
	logf_("cublasSgemm_v2 %c%c %d %d %d alpha %g beta %g math %d\n", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, *alpha, *beta, h->math);
	return 0;
}
