// fakenvjpeg.c — a fake libnvjpeg for the tests of package cuda, built by
// them with the machine's cc and loaded through the same purego path as the
// real library. It is never built into headspace and no command selects it
// (only a test passes its path).
//
// Its "JPEG" is not JPEG: "FAKEJPG" then uint32 width, uint32 height
// (little-endian) and width*height*3 interleaved RGB bytes, so a test knows
// what a decode must write; or a real JPEG, whose size it reads from the
// frame header and whose interleaved RGB byte k it "decodes" as the file's
// byte k mod its length. Decoding writes planar RGB (NVJPEG_OUTPUT_RGB)
// or interleaved RGB in channel 0 (NVJPEG_OUTPUT_RGBI), as the batched
// decoder was initialised, at the destinations' channel pointers with their
// pitches: device memory of the fake driver is host memory, so the
// pointers are writable here. Its version (nvjpegGetProperty) is 12.4.127. Anything else is
// NVJPEG_STATUS_BAD_JPEG. Handles are checked, and the batch is checked
// against nvjpegDecodeBatchedInitialize's.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { SUCCESS = 0, NOT_INITIALIZED = 1, INVALID_PARAMETER = 2, BAD_JPEG = 3 };
enum { MAGIC_HANDLE = 0x4a48, MAGIC_STATE = 0x4a53 };

struct handle { int magic; };
struct state { int magic, batch, threads, format; };
typedef struct { unsigned char *channel[4]; size_t pitch[4]; } nvjpegImage_t;

static long live;

long fake_nvjpeg_live(void) { return live; }

int nvjpegCreateSimple(struct handle **h) {
	if (!h) return INVALID_PARAMETER;
	*h = calloc(1, sizeof **h);
	(*h)->magic = MAGIC_HANDLE;
	live++;
	return SUCCESS;
}

// nvjpegCreateEx takes the hardware backend (3) too, unless built with
// -DFAKE_NO_HARDWARE: then, as on a card without JPEG engines, it refuses
// it with NVJPEG_STATUS_ARCH_MISMATCH.
int nvjpegCreateEx(int backend, void *dev, void *pinned, unsigned flags, struct handle **h) {
	(void)dev, (void)pinned, (void)flags;
	if (backend < 0 || backend > 4) return INVALID_PARAMETER;
#ifdef FAKE_NO_HARDWARE
	if (backend == 3) return 7;
#endif
	return nvjpegCreateSimple(h);
}

int nvjpegDestroy(struct handle *h) {
	if (!h || h->magic != MAGIC_HANDLE) return INVALID_PARAMETER;
	h->magic = 0;
	free(h);
	live--;
	return SUCCESS;
}

int nvjpegJpegStateCreate(struct handle *h, struct state **s) {
	if (!h || h->magic != MAGIC_HANDLE || !s) return INVALID_PARAMETER;
	*s = calloc(1, sizeof **s);
	(*s)->magic = MAGIC_STATE;
	live++;
	return SUCCESS;
}

int nvjpegJpegStateDestroy(struct state *s) {
	if (!s || s->magic != MAGIC_STATE) return INVALID_PARAMETER;
	s->magic = 0;
	free(s);
	live--;
	return SUCCESS;
}

int nvjpegDecodeBatchedInitialize(struct handle *h, struct state *s, int batch, int threads, int format) {
	if (!h || h->magic != MAGIC_HANDLE || !s || s->magic != MAGIC_STATE) return INVALID_PARAMETER;
	if (batch <= 0 || threads <= 0 || (format != 3 && format != 5) /* NVJPEG_OUTPUT_RGB, RGBI: what the binding asks */)
		return INVALID_PARAMETER;
	s->batch = batch, s->threads = threads, s->format = format;
	return SUCCESS;
}

// parseReal reads a real JPEG's size from its first SOFn segment (as
// ondisk.JPEGSize does): the loader checks real files on the host, so its
// tests hand the fake real JPEGs, whose "decoded" interleaved RGB byte k is
// the file's byte k mod its length.
static int parseReal(const unsigned char *d, size_t n, uint32_t *w, uint32_t *h) {
	size_t i = 2;
	for (;;) {
		while (i < n && d[i] != 0xff) i++;
		while (i < n && d[i] == 0xff) i++;
		if (i >= n) return BAD_JPEG;
		unsigned m = d[i++];
		if (m == 0x00 || m == 0x01 || m == 0xd8 || (m >= 0xd0 && m <= 0xd7)) continue;
		if (m == 0xd9 || m == 0xda || i + 2 > n) return BAD_JPEG;
		size_t len = (size_t)d[i] << 8 | d[i + 1];
		if (len < 2 || i + len > n) return BAD_JPEG;
		if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
			if (len < 7) return BAD_JPEG;
			*h = (uint32_t)d[i + 3] << 8 | d[i + 4];
			*w = (uint32_t)d[i + 5] << 8 | d[i + 6];
			return *w && *h ? SUCCESS : BAD_JPEG;
		}
		i += len;
	}
}

static int parse(const unsigned char *d, size_t n, uint32_t *w, uint32_t *h) {
	if (d && n >= 4 && d[0] == 0xff && d[1] == 0xd8) return parseReal(d, n, w, h);
	if (!d || n < 15 || memcmp(d, "FAKEJPG", 7)) return BAD_JPEG;
	memcpy(w, d + 7, 4);
	memcpy(h, d + 11, 4);
	if ((size_t)*w * *h * 3 + 15 != n) return BAD_JPEG;
	return SUCCESS;
}

// pixel is byte k of image i's interleaved RGB.
static unsigned char pixel(const unsigned char *d, size_t n, size_t k) {
	if (d[0] == 0xff) return d[k % n];
	return d[15 + k];
}

int nvjpegGetImageInfo(struct handle *h, const unsigned char *d, size_t n, int *comps, int *sub, int *ws, int *hs) {
	if (!h || h->magic != MAGIC_HANDLE || !comps || !sub || !ws || !hs) return INVALID_PARAMETER;
	uint32_t w, hh;
	int r = parse(d, n, &w, &hh);
	if (r) return r;
	*comps = 3, *sub = 0 /* NVJPEG_CSS_444 */;
	for (int i = 0; i < 4; i++) ws[i] = i < 3 ? (int)w : 0, hs[i] = i < 3 ? (int)hh : 0;
	return SUCCESS;
}

int nvjpegDecodeBatched(struct handle *h, struct state *s, const unsigned char *const *data, const size_t *lengths,
                        nvjpegImage_t *dst, void *stream) {
	(void)stream;
	if (!h || h->magic != MAGIC_HANDLE || !s || s->magic != MAGIC_STATE) return INVALID_PARAMETER;
	if (!s->batch) return NOT_INITIALIZED;
	if (!data || !lengths || !dst) return INVALID_PARAMETER;
	for (int i = 0; i < s->batch; i++) {
		uint32_t w, hh;
		int r = parse(data[i], lengths[i], &w, &hh);
		if (r) return r;
		const unsigned char *d = data[i];
		size_t n = lengths[i];
		if (s->format == 5) {
			if (!dst[i].channel[0] || dst[i].pitch[0] < 3 * (size_t)w) return INVALID_PARAMETER;
			for (uint32_t y = 0; y < hh; y++)
				for (size_t x = 0; x < 3 * (size_t)w; x++) dst[i].channel[0][y * dst[i].pitch[0] + x] = pixel(d, n, (size_t)y * w * 3 + x);
			continue;
		}
		for (int c = 0; c < 3; c++)
			if (!dst[i].channel[c] || dst[i].pitch[c] < w) return INVALID_PARAMETER;
		for (uint32_t y = 0; y < hh; y++)
			for (uint32_t x = 0; x < w; x++)
				for (int c = 0; c < 3; c++) dst[i].channel[c][y * dst[i].pitch[c] + x] = pixel(d, n, ((size_t)y * w + x) * 3 + c);
	}
	return SUCCESS;
}

int nvjpegGetProperty(int type, int *value) {
	static const int version[3] = {12, 4, 127};
	if (type < 0 || type > 2 || !value) return INVALID_PARAMETER;
	*value = version[type];
	return SUCCESS;
}
