// fakednn.c — a fake libcudnn and libcublas for the tests of package cuda,
// built by them with the machine's cc and loaded through the same purego
// path as the real libraries (one file holds both sets of entry points; a
// test opens it as each). It is never built into headspace and no command
// selects it (only a test passes its path). It times nothing: never a
// source of figures.
//
// It checks its handles and descriptors (magic numbers, set before use,
// the shapes of a convolution's tensors against each other), records
// every call that matters in a log ("name arg arg …\n", read by
// fake_dnn_log, and $FAKEDNN_LOG's file), counts live objects (fake_dnn_live) and fails the
// after+1-th next call of a name with a status (fake_dnn_fail). Its
// algorithm search returns three results, the fastest first: algorithm 1
// (needing 4096 bytes of workspace), 0 (none) and 2 (a failed one).
//
// It computes what it is asked, on the host: the fake CUDA driver's
// device memory is malloc'd host memory and its device pointers are host
// addresses, so the convolutions (direct sums in float, the operands
// rounded to TF32 first, to nearest with ties away, under tensor-op
// math), the bias, the ReLU and SGEMM write real results where the
// tests read them back, and a plan's library ops can be checked against
// the host reference end to end. It computes them at the call, not in
// stream order, and not into a CUDA Graph being captured.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OK = 0, NOT_INITIALIZED = 1, BAD_PARAM = 3 };
enum { M_HANDLE = 0x444e, M_TENSOR = 0x5445, M_FILTER = 0x4649, M_CONV = 0x434f, M_BLAS = 0x424c, M_ACT = 0x4143 };

struct obj { int magic, set; int v[8]; void *stream; int math; };

static char logbuf[1 << 16];
static size_t loglen;
static long live;
static char failname[64];
static int failafter = -1, failcode;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
// logf_ appends to the log, and to the file $FAKEDNN_LOG names where it
// is set (for a test that runs headspace in another process).
static void logf_(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(logbuf + loglen, sizeof logbuf - loglen, fmt, ap);
	va_end(ap);
	const char *path = getenv("FAKEDNN_LOG");
	if (n > 0 && path && *path) {
		FILE *f = fopen(path, "a");
		if (f) {
			fwrite(logbuf + loglen, 1, strlen(logbuf + loglen), f);
			fclose(f);
		}
	}
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

// tf32 rounds v to TF32 (10 explicit mantissa bits), to nearest with
// ties away from zero, as cvt.rna.tf32.f32 does.
static float tf32(float v) {
	uint32_t b;
	memcpy(&b, &v, 4);
	if ((b & 0x7f800000) != 0x7f800000) b = (b + 0x1000) & ~0x1fffu;
	memcpy(&v, &b, 4);
	return v;
}

// store writes alpha·v + beta·*out (beta 0: *out is not read, as cuDNN).
static void store(float *out, float alpha, float v, float beta) { *out = alpha * v + (beta != 0 ? beta * *out : 0); }

static long count4(struct obj *t) { return (long)t->v[0] * t->v[1] * t->v[2] * t->v[3]; }

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

// shapes checks that x (N×C×H×W), w (K×C×R×S) and y (N×K×OH×OW) are one
// convolution's, with the convolution's padding and stride 1.
static int shapes(struct obj *x, struct obj *w, struct obj *conv, struct obj *y) {
	int pad = conv->v[0];
	return x->v[0] == y->v[0] && x->v[1] == w->v[1] && y->v[1] == w->v[0] &&
	       y->v[2] == x->v[2] + 2 * pad - w->v[2] + 1 && y->v[3] == x->v[3] + 2 * pad - w->v[3] + 1;
}

static int run(const char *name, struct obj *h, const float *alpha, struct obj *x, struct obj *w, struct obj *conv, int algo, void *ws, size_t wsSize, const float *beta, struct obj *y) {
	if (fails(name)) return failcode;
	if (!ok(h, M_HANDLE) || !ok(conv, M_CONV) || !alpha || !beta || !ok(x, M_TENSOR) || !ok(w, M_FILTER) || !ok(y, M_TENSOR)) return BAD_PARAM;
	if (!shapes(x, w, conv, y)) return BAD_PARAM;
	if (algo == 1 && (!ws || wsSize < 4096)) return BAD_PARAM;
	logf_("%s algo %d workspace %zu alpha %g beta %g stream %s\n", name, algo, wsSize, *alpha, *beta, h->stream ? "set" : "default");
	return OK;
}

// The convolution's sizes, and the operand rounding of its math type.
#define DIMS(xD, wD, yD, conv) \
	int N = xD->v[0], C = xD->v[1], H = xD->v[2], W = xD->v[3], K = wD->v[0], R = wD->v[2], S = wD->v[3]; \
	int OH = yD->v[2], OW = yD->v[3], P = conv->v[0], T = conv->math == 1; \
	(void)N, (void)C, (void)H, (void)W, (void)K, (void)R, (void)S, (void)OH, (void)OW, (void)P
#define OP(v) (T ? tf32(v) : (v))

int cudnnConvolutionForward(struct obj *h, const float *alpha, struct obj *xD, const float *x, struct obj *wD, const float *w, struct obj *conv, int algo, void *ws, size_t wsSize, const float *beta, struct obj *yD, float *y) {
	int e = run("cudnnConvolutionForward", h, alpha, xD, wD, conv, algo, ws, wsSize, beta, yD);
	if (e) return e;
	DIMS(xD, wD, yD, conv);
	for (int n = 0; n < N; n++)
		for (int k = 0; k < K; k++)
			for (int oy = 0; oy < OH; oy++)
				for (int ox = 0; ox < OW; ox++) {
					float acc = 0;
					for (int c = 0; c < C; c++)
						for (int r = 0; r < R; r++)
							for (int s = 0; s < S; s++) {
								int iy = oy + r - P, ix = ox + s - P;
								if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
								acc += OP(x[((n * C + c) * H + iy) * W + ix]) * OP(w[((k * C + c) * R + r) * S + s]);
							}
					store(&y[((n * K + k) * OH + oy) * OW + ox], *alpha, acc, *beta);
				}
	return OK;
}
int cudnnConvolutionBackwardData(struct obj *h, const float *alpha, struct obj *wD, const float *w, struct obj *dyD, const float *dy, struct obj *conv, int algo, void *ws, size_t wsSize, const float *beta, struct obj *dxD, float *dx) {
	int e = run("cudnnConvolutionBackwardData", h, alpha, dxD, wD, conv, algo, ws, wsSize, beta, dyD);
	if (e) return e;
	DIMS(dxD, wD, dyD, conv);
	for (int n = 0; n < N; n++)
		for (int c = 0; c < C; c++)
			for (int iy = 0; iy < H; iy++)
				for (int ix = 0; ix < W; ix++) {
					float acc = 0;
					for (int k = 0; k < K; k++)
						for (int r = 0; r < R; r++)
							for (int s = 0; s < S; s++) {
								int oy = iy - r + P, ox = ix - s + P;
								if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
								acc += OP(dy[((n * K + k) * OH + oy) * OW + ox]) * OP(w[((k * C + c) * R + r) * S + s]);
							}
					store(&dx[((n * C + c) * H + iy) * W + ix], *alpha, acc, *beta);
				}
	return OK;
}
int cudnnConvolutionBackwardFilter(struct obj *h, const float *alpha, struct obj *xD, const float *x, struct obj *dyD, const float *dy, struct obj *conv, int algo, void *ws, size_t wsSize, const float *beta, struct obj *dwD, float *dw) {
	int e = run("cudnnConvolutionBackwardFilter", h, alpha, xD, dwD, conv, algo, ws, wsSize, beta, dyD);
	if (e) return e;
	DIMS(xD, dwD, dyD, conv);
	for (int k = 0; k < K; k++)
		for (int c = 0; c < C; c++)
			for (int r = 0; r < R; r++)
				for (int s = 0; s < S; s++) {
					float acc = 0;
					for (int n = 0; n < N; n++)
						for (int oy = 0; oy < OH; oy++)
							for (int ox = 0; ox < OW; ox++) {
								int iy = oy + r - P, ix = ox + s - P;
								if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
								acc += OP(dy[((n * K + k) * OH + oy) * OW + ox]) * OP(x[((n * C + c) * H + iy) * W + ix]);
							}
					store(&dw[((k * C + c) * R + r) * S + s], *alpha, acc, *beta);
				}
	return OK;
}

// dy (N×K×H×W) summed over all but K into db (1×K×1×1).
int cudnnConvolutionBackwardBias(struct obj *h, const float *alpha, struct obj *dyD, const float *dy, const float *beta, struct obj *dbD, float *db) {
	FAIL("cudnnConvolutionBackwardBias");
	if (!ok(h, M_HANDLE) || !alpha || !beta || !ok(dyD, M_TENSOR) || !ok(dbD, M_TENSOR) || !dy || !db) return BAD_PARAM;
	if (dbD->v[0] != 1 || dbD->v[1] != dyD->v[1] || dbD->v[2] != 1 || dbD->v[3] != 1) return BAD_PARAM;
	int N = dyD->v[0], K = dyD->v[1], area = dyD->v[2] * dyD->v[3];
	for (int k = 0; k < K; k++) {
		float acc = 0;
		for (int n = 0; n < N; n++)
			for (int i = 0; i < area; i++) acc += dy[(n * K + k) * area + i];
		store(&db[k], *alpha, acc, *beta);
	}
	logf_("cudnnConvolutionBackwardBias %d %d %d %d alpha %g beta %g\n", dyD->v[0], dyD->v[1], dyD->v[2], dyD->v[3], *alpha, *beta);
	return OK;
}

// C = alpha·A + beta·C, A broadcast over the dimensions where it is 1.
int cudnnAddTensor(struct obj *h, const float *alpha, struct obj *aD, const float *A, const float *beta, struct obj *cD, float *Cp) {
	FAIL("cudnnAddTensor");
	if (!ok(h, M_HANDLE) || !alpha || !beta || !ok(aD, M_TENSOR) || !ok(cD, M_TENSOR) || !A || !Cp) return BAD_PARAM;
	int st[4], d[4];
	for (int i = 0; i < 4; i++) {
		if (aD->v[i] != 1 && aD->v[i] != cD->v[i]) return BAD_PARAM;
		d[i] = cD->v[i];
	}
	// A's strides, 0 where it is broadcast.
	st[3] = aD->v[3] == 1 ? 0 : 1;
	st[2] = aD->v[2] == 1 ? 0 : aD->v[3];
	st[1] = aD->v[1] == 1 ? 0 : aD->v[3] * aD->v[2];
	st[0] = aD->v[0] == 1 ? 0 : aD->v[3] * aD->v[2] * aD->v[1];
	long i = 0;
	for (int a = 0; a < d[0]; a++)
		for (int b = 0; b < d[1]; b++)
			for (int c = 0; c < d[2]; c++)
				for (int e = 0; e < d[3]; e++, i++) store(&Cp[i], *alpha, A[a * st[0] + b * st[1] + c * st[2] + e * st[3]], *beta);
	logf_("cudnnAddTensor %d %d %d %d to %d %d %d %d alpha %g beta %g\n", aD->v[0], aD->v[1], aD->v[2], aD->v[3], d[0], d[1], d[2], d[3], *alpha, *beta);
	return OK;
}

int cudnnCreateActivationDescriptor(struct obj **d) { FAIL("cudnnCreateActivationDescriptor"); return make(d, M_ACT); }
int cudnnDestroyActivationDescriptor(struct obj *d) { return drop(d, M_ACT); }
int cudnnSetActivationDescriptor(struct obj *d, int mode, int nanOpt, double coef) {
	FAIL("cudnnSetActivationDescriptor");
	if (!d || d->magic != M_ACT || mode < 0 || mode > 5 || nanOpt < 0 || nanOpt > 1) return BAD_PARAM;
	d->set = 1, d->v[0] = mode;
	logf_("cudnnSetActivationDescriptor mode %d nan %d coef %g\n", mode, nanOpt, coef);
	return OK;
}

// The ReLU (mode 1, the only one the fake computes) over every value of
// the tensors, which must be one shape.
static int act(const char *name, struct obj *h, struct obj *a, const float *alpha, const float *beta, struct obj *t1, struct obj *t2) {
	if (fails(name)) return failcode;
	if (!ok(h, M_HANDLE) || !ok(a, M_ACT) || a->v[0] != 1 || !alpha || !beta || !ok(t1, M_TENSOR) || !ok(t2, M_TENSOR) || count4(t1) != count4(t2)) return BAD_PARAM;
	logf_("%s %ld alpha %g beta %g\n", name, count4(t1), *alpha, *beta);
	return OK;
}

int cudnnActivationForward(struct obj *h, struct obj *a, const float *alpha, struct obj *xD, const float *x, const float *beta, struct obj *yD, float *y) {
	int e = act("cudnnActivationForward", h, a, alpha, beta, xD, yD);
	if (e) return e;
	for (long i = 0, n = count4(xD); i < n; i++) store(&y[i], *alpha, x[i] > 0 ? x[i] : 0, *beta);
	return OK;
}

int cudnnActivationBackward(struct obj *h, struct obj *a, const float *alpha, struct obj *yD, const float *y, struct obj *dyD, const float *dy,
                            struct obj *xD, const float *x, const float *beta, struct obj *dxD, float *dx) {
	int e = act("cudnnActivationBackward", h, a, alpha, beta, yD, dxD);
	if (e) return e;
	if (!ok(dyD, M_TENSOR) || !ok(xD, M_TENSOR) || count4(dyD) != count4(yD) || count4(xD) != count4(yD)) return BAD_PARAM;
	(void)y;
	for (long i = 0, n = count4(yD); i < n; i++) store(&dx[i], *alpha, x[i] > 0 ? dy[i] : 0, *beta);
	return OK;
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
	FAIL("cublasSgemm_v2");
	if (!ok(h, M_BLAS) || !alpha || !beta || m <= 0 || n <= 0 || k <= 0 || lda <= 0 || ldb <= 0 || ldc < m) return 7;
	// Column-major, as cuBLAS: C (m×n) = alpha·op(A)·op(B) + beta·C.
	int t = h->math == 3;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			float acc = 0;
			for (int p = 0; p < k; p++) {
				float av = ta ? a[p + i * lda] : a[i + p * lda], bv = tb ? b[j + p * ldb] : b[p + j * ldb];
				acc += (t ? tf32(av) : av) * (t ? tf32(bv) : bv);
			}
			store(&c[i + j * ldc], *alpha, acc, *beta);
		}
	logf_("cublasSgemm_v2 %c%c %d %d %d alpha %g beta %g math %d\n", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, *alpha, *beta, h->math);
	return 0;
}
