// The history page's script (see WritePage in page.go). It draws a chart
// only when it scrolls into view, decoding only that chart's samples,
// shares a
// zoomed range of nights between a machine's charts, and compares any
// two runs of a machine as the gate does (harness/gate: the
// median and its interval of package summary, the Mann–Whitney U test of
// go-moremath, Benjamini–Hochberg, the threshold); TestPageCompareMatchesGate
// checks its verdicts against the gate's.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var tip = document.getElementById("tip");
  var root = document.getElementById("machines");
  var samples = null; // the sample text: every series' blob, base64 (read when first needed)

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  function pct(d) { return (d >= 0 ? "+" : "") + (100 * d).toFixed(1) + "%"; }

  // inflate is src, raw DEFLATE (RFC 1951), inflated into n bytes: a
  // series' blob is a few KB, so this, synchronous, draws a chart in the
  // task that finds it in view, where the browser's DecompressionStream
  // would answer a task (and often a frame) later, one series at a time.
  // The decoder is Mark Adler's puff (zlib's contrib/puff): canonical
  // Huffman codes, looked up 9 bits at a time, longer ones a bit at a time.
  var LBASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
  var LEXT = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
  var DBASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
  var DEXT = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
  var CLORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
  var fixed = null;
  // huffman is the canonical code of lens[from … from+n): how many codes
  // of each length, the symbols in code order, and fast: for the next 9
  // bits of input, the symbol << 4 | its length, 0 where the code is longer.
  function huffman(lens, from, n) {
    var count = new Uint16Array(16), offs = new Uint16Array(16), symbol = new Uint16Array(n), fast = new Int32Array(512), next = new Uint16Array(16), i, len;
    for (i = 0; i < n; i++) count[lens[from + i]]++;
    count[0] = 0;
    for (i = 1; i < 16; i++) offs[i] = offs[i - 1] + count[i - 1];
    for (i = 0; i < n; i++) if (lens[from + i]) symbol[offs[lens[from + i]]++] = i;
    for (len = 1; len < 16; len++) next[len] = (next[len - 1] + count[len - 1]) << 1;
    for (i = 0; i < n; i++) {
      len = lens[from + i];
      if (!len) continue;
      var code = next[len]++, rev = 0;
      if (len > 9) continue;
      for (var k = 0; k < len; k++) { rev = rev << 1 | code & 1; code >>= 1; }
      for (; rev < 512; rev += 1 << len) fast[rev] = i << 4 | len;
    }
    return { count: count, symbol: symbol, fast: fast };
  }
  function inflate(src, n) {
    var out = new Uint8Array(n), op = 0, pos = 0, buf = 0, cnt = 0, last, i;
    function bits(k) { // the next k bits, first bit lowest
      while (cnt < k) { if (pos >= src.length) throw new Error("sample blob ends early"); buf |= src[pos++] << cnt; cnt += 8; }
      var v = buf & ((1 << k) - 1);
      buf >>>= k; cnt -= k;
      return v;
    }
    function decode(h) {
      while (cnt < 9 && pos < src.length) { buf |= src[pos++] << cnt; cnt += 8; }
      var e = h.fast[buf & 511];
      if (e && (e & 15) <= cnt) { buf >>>= e & 15; cnt -= e & 15; return e >> 4; }
      var code = 0, first = 0, index = 0;
      for (var len = 1; len < 16; len++) {
        code |= bits(1);
        var c = h.count[len];
        if (code - first < c) return h.symbol[index + code - first];
        index += c; first = (first + c) << 1; code <<= 1;
      }
      throw new Error("sample blob: bad Huffman code");
    }
    do {
      last = bits(1);
      var type = bits(2), lc, dc;
      if (type === 0) { // stored: from the next byte, its length, ~length, the bytes
        buf = 0; cnt = 0;
        var len = src[pos] | src[pos + 1] << 8;
        pos += 4;
        out.set(src.subarray(pos, pos + len), op);
        pos += len; op += len;
        continue;
      } else if (type === 1) {
        if (!fixed) {
          var fl = new Uint8Array(320);
          for (i = 0; i < 320; i++) fl[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : i < 288 ? 8 : 5;
          fixed = [huffman(fl, 0, 288), huffman(fl, 288, 30)];
        }
        lc = fixed[0]; dc = fixed[1];
      } else if (type === 2) {
        var nlen = bits(5) + 257, ndist = bits(5) + 1, ncode = bits(4) + 4, cl = new Uint8Array(19), lens = new Uint8Array(nlen + ndist);
        for (i = 0; i < ncode; i++) cl[CLORDER[i]] = bits(3);
        var clc = huffman(cl, 0, 19);
        for (i = 0; i < nlen + ndist;) {
          var sym = decode(clc);
          if (sym < 16) { lens[i++] = sym; continue; }
          var val = 0, rep;
          if (sym === 16) { val = lens[i - 1]; rep = 3 + bits(2); } else if (sym === 17) rep = 3 + bits(3); else rep = 11 + bits(7);
          while (rep--) lens[i++] = val;
        }
        lc = huffman(lens, 0, nlen); dc = huffman(lens, nlen, ndist);
      } else throw new Error("sample blob: bad block type");
      for (;;) {
        var c = decode(lc);
        if (c < 256) { out[op++] = c; continue; }
        if (c === 256) break;
        c -= 257;
        var length = LBASE[c] + bits(LEXT[c]), d = decode(dc), dist = DBASE[d] + bits(DEXT[d]);
        for (; length > 0; length--, op++) out[op] = out[op - dist];
      }
    } while (!last);
    if (op !== n) throw new Error("sample blob: " + op + " bytes inflated, want " + n);
    return out;
  }

  // points decodes series s (once): its blob (base64, inflate), then per
  // point its run, its sorted samples, median, lo and hi.
  function points(s) {
    if (s.pts) return s.pts;
    if (samples == null) samples = document.getElementById("samples").textContent;
    var bin = atob(samples.substr(s.at, s.len)), z = new Uint8Array(bin.length);
    for (var j = 0; j < bin.length; j++) z[j] = bin.charCodeAt(j);
    var blob = inflate(z, s.raw), pos = 0, run = -1, first = 0, out = [];
    var scale = Math.pow(10, Math.abs(s.exp)), div = s.exp < 0;
    function uv() {
      var v = 0, mul = 1, b;
      do { b = blob[pos++]; v += (b & 127) * mul; mul *= 128; } while (b & 128);
      return v;
    }
    for (var k = 0; k < s.np; k++) {
      run += uv();
      var n = uv(), xs = new Array(n), cur = 0;
      for (var i = 0; i < n; i++) {
        if (i === 0) { var z = uv(); first += z % 2 ? -(z + 1) / 2 : z / 2; cur = first; } else cur += uv();
        xs[i] = div ? cur / scale : cur * scale;
      }
      var ci = data.ci[n];
      out.push({ run: run, xs: xs, median: median(xs),
        lo: ci[0] < 0 ? -Infinity : xs[ci[0]], hi: ci[1] < 0 ? Infinity : xs[ci[1]] });
    }
    s.pts = out;
    s.byRun = {};
    out.forEach(function (p) { s.byRun[p.run] = p; });
    return out;
  }

  // median is go-moremath's Sample.Quantile(0.5) of sorted xs (R8), as
  // package summary's median.
  function median(xs) {
    var N = xs.length;
    if (N === 0) return NaN;
    var n = 1 / 3 + 0.5 * (N + 1 / 3), k = Math.trunc(n), frac = n - k;
    if (k <= 0) return xs[0];
    if (k >= N) return xs[N - 1];
    return xs[k - 1] + frac * (xs[k] - xs[k - 1]);
  }

  // format is benchunit's Scale: v with an SI (or binary) prefix and
  // 3 to 4 significant digits, as the Go reports write values.
  var SI = [], IEC = [];
  ["T", "G", "M", "k", "", "m", "µ", "n"].forEach(function (p, i) {
    var e = 12 - 3 * i;
    SI.push([Math.pow(10, e), p, parseFloat("99.995e" + e), parseFloat("9.9995e" + e), parseFloat(".99995e" + e)]);
  });
  ["Ti", "Gi", "Mi", "Ki", ""].forEach(function (p, i) {
    var f = Math.pow(2, 40 - 10 * i);
    IEC.push([f, p, 99.995 * f, 9.9995 * f, 0.99995 * f]);
  });
  function format(v, bin) {
    if (!isFinite(v)) return isNaN(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    var min = Math.abs(v), prec = 3, f = 1, p = "";
    if (min !== 0) {
      var fs = bin ? IEC : SI, found = false;
      for (var i = 0; i < fs.length && !found; i++) {
        var c = fs[i];
        if (min >= c[2]) { prec = 1; found = true; } else if (min >= c[3]) { prec = 2; found = true; } else if (min >= c[4]) { prec = 3; found = true; }
        if (found) { f = c[0]; p = c[1]; }
      }
      if (!found) {
        var last = fs[fs.length - 1], val = min / last[0];
        f = last[0]; p = last[1];
        for (var j = 0; j < 8; j++) if (val >= parseFloat("9.9995e" + (-1 - j)) || j === 7) { prec = j + 3; break; }
      }
    }
    return (v / f).toFixed(prec) + p;
  }
  function withInterval(p, s) {
    var hw = Math.max(p.median - p.lo, p.hi - p.median) / Math.abs(p.median);
    return format(p.median, s.bin) + " ± " + (isFinite(hw) ? (100 * hw).toFixed(0) + "%" : "∞");
  }

  // ---- The gate's statistics, ported (go-moremath stats.MannWhitneyUTest).
  function choose(n, k) {
    if (k < 0 || k > n) return 0;
    var c = 1;
    k = Math.min(k, n - k);
    for (var i = 1; i <= k; i++) c = c * (n - k + i) / i;
    return Math.round(c);
  }
  // uPMF is UDist.p: the probabilities of U = 0 … U without ties.
  function uPMF(N1, N2, U) {
    var N = Math.min(N1, N2), M = Math.max(N1, N2), memo = [];
    for (var n = 0; n <= N; n++) memo.push(new Float64Array(U + 1));
    for (var m = 0; m <= M; m++) {
      memo[0][0] = 1;
      for (n = 1; n <= Math.min(N, m); n++) {
        var lp = memo[n - 1], rp = n <= m - 1 ? memo[n] : memo[m - 1], out = memo[n];
        for (var u = Math.min(n * m, U); u >= 0; u--) {
          var l = u - m >= 0 ? n * lp[u - m] : 0;
          out[u] = (l + m * rp[u]) / (n + m);
        }
      }
    }
    return memo[N];
  }
  function twoUmin(n1, t, K, a) {
    var twoU = -n1 * n1;
    for (var k = 1; k <= K; k++) { var r = Math.min(n1, t[k - 1]); twoU += r * a[k]; n1 -= r; }
    return twoU;
  }
  function twoUmax(n1, t, K, a) {
    var twoU = -n1 * n1;
    for (var k = K; k > 0; k--) { var r = Math.min(n1, t[k - 1]); twoU += r * a[k]; n1 -= r; }
    return twoU;
  }
  // uTiesCDF is UDist.CDF with ties (Cheung and Klotz's recursion, as
  // makeUmemo): P(2U' <= twoU) for tie counts t.
  function uTiesCDF(twoU, n1, N2, t) {
    var K = t.length, a = [0, t[0]], A = [], k, tsum = 0;
    for (k = 2; k <= K; k++) a[k] = a[k - 1] + t[k - 2] + t[k - 1];
    for (k = 0; k < K; k++) tsum += t[k];
    A[K] = new Map([[n1 + "," + twoU, { n1: n1, twoU: twoU, v: 0 }]]);
    for (k = K - 1; k >= 2; k--) {
      tsum -= t[k];
      A[k] = new Map();
      A[k + 1].forEach(function (e) {
        for (var rk = Math.max(0, e.n1 - tsum); rk <= Math.min(e.n1, t[k]); rk++) {
          var tu = e.twoU - rk * (a[k + 1] - 2 * e.n1 + rk), nk = e.n1 - rk;
          if (twoUmin(nk, t, k, a) <= tu && tu <= twoUmax(nk, t, k, a)) A[k].set(nk + "," + tu, { n1: nk, twoU: tu, v: 0 });
        }
      });
    }
    var N_2 = t[0] + t[1];
    A[2].forEach(function (e) {
      var sum = 0, hi = Math.trunc((e.twoU - e.n1 * (t[0] - e.n1)) / N_2);
      for (var r2 = Math.max(0, e.n1 - t[0]); r2 <= hi; r2++) sum += choose(t[0], e.n1 - r2) * choose(t[1], r2);
      e.v = sum;
    });
    tsum = t[0];
    for (k = 3; k <= K; k++) {
      tsum += t[k - 2];
      A[k].forEach(function (e) {
        var sum = 0;
        for (var rk = Math.max(0, e.n1 - tsum); rk <= Math.min(e.n1, t[k - 1]); rk++) {
          var tu = e.twoU - rk * (a[k] - 2 * e.n1 + rk), nk = e.n1 - rk, x = A[k - 1].get(nk + "," + tu), xv = 0;
          if (x) xv = x.v; else if (twoUmax(nk, t, k - 1, a) < tu) xv = choose(tsum, nk);
          sum += xv * choose(t[k - 1], rk);
        }
        e.v = sum;
      });
    }
    return A[K].get(n1 + "," + twoU).v / choose(n1 + N2, n1);
  }
  function uCDF(U, N1, N2, t, ties) {
    if (U < 0) return 0;
    if (U >= N1 * N2) return 1;
    if (ties) return uTiesCDF(Math.trunc(2 * U), N1, N2, t);
    var Ui = Math.floor(U), flip = Ui >= Math.trunc((N1 * N2 + 1) / 2);
    if (flip) Ui = N1 * N2 - Ui - 1;
    var pdfs = uPMF(N1, N2, Ui), p = 0;
    for (var i = 0; i <= Ui; i++) p += pdfs[i];
    return flip ? 1 - p : p;
  }
  function erfc(x) { // |error| < 1e-13: series below 3, continued fraction beyond
    var ax = Math.abs(x), r;
    if (ax < 3) {
      var term = ax, sum = ax, n = 0;
      while (Math.abs(term) > 1e-17 * Math.abs(sum)) { n++; term *= -ax * ax / n; sum += term / (2 * n + 1); }
      r = 1 - 2 / Math.sqrt(Math.PI) * sum;
    } else {
      var f = 0;
      for (var k = 60; k >= 1; k--) f = k / 2 / (ax + f);
      r = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / (ax + f);
    }
    return x < 0 ? 2 - r : r;
  }
  // mannWhitney is the two-sided p-value of the U test of sorted x1, x2;
  // 1 when every value is equal (benchmath's answer to the test's error).
  function mannWhitney(x1, x2) {
    var n1 = x1.length, n2 = x2.length, merged = [], labels = [], i = 0, j = 0;
    while (i < n1 && j < n2) {
      if (x1[i] < x2[j]) { merged.push(x1[i++]); labels.push(1); } else { merged.push(x2[j++]); labels.push(2); }
    }
    for (; i < n1; i++) { merged.push(x1[i]); labels.push(1); }
    for (; j < n2; j++) { merged.push(x2[j]); labels.push(2); }
    var R1 = 0, T = [], ties = false;
    for (i = 0; i < merged.length;) {
      var rank1 = i + 1, nx1 = 0, v1 = merged[i];
      for (; i < merged.length && merged[i] === v1; i++) if (labels[i] === 1) nx1++;
      if (nx1) R1 += (i + rank1) / 2 * nx1;
      T.push(i - rank1 + 1);
      if (i > rank1) ties = true;
    }
    var U1 = R1 - n1 * (n1 + 1) / 2, U2 = n1 * n2 - U1;
    if (!ties && n1 <= 50 && n2 <= 50 || ties && n1 <= 25 && n2 <= 25) {
      if (T.length === 1 || U1 === U2) return 1;
      return uCDF(Math.min(U1, U2), n1, n2, T, ties) * 2;
    }
    var tc = 0;
    T.forEach(function (t) { tc += t * t * t - t; });
    var N = n1 + n2, sd = Math.sqrt(n1 * n2 * ((N + 1) - tc / (N * (N - 1))) / 12);
    if (sd === 0) return 1;
    var numer = U1 - n1 * n2 / 2;
    numer -= Math.sign(numer) * 0.5;
    var z = numer / sd, cdf = 0.5 * erfc(-z / Math.SQRT2);
    return 2 * Math.min(cdf, 1 - cdf);
  }
  function minP(n1, n2) {
    var k = Math.min(n1, n2), c = 1;
    for (var i = 1; i <= k; i++) c = c * (n1 + n2 - k + i) / i;
    return Math.min(1, 2 / c);
  }
  function delta(o, n) {
    if (o === n) return 0;
    if (o === 0) return n > 0 ? Infinity : -Infinity;
    return n / o - 1;
  }

  // compare is the gate's comparison of machine m's runs i (old) and j
  // (new): a row per series either holds, with its verdict.
  function compare(m, i, j) {
    var rows = [], disturbed = {};
    m.series.forEach(function (s) {
      points(s);
      if (s.unit === "disturbed") {
        disturbed[s.benchmark] = [i, j].map(function (r) { return (s.byRun[r] ? s.byRun[r].xs : []).filter(function (v) { return v > 0; }).length; });
      }
    });
    m.series.forEach(function (s) {
      var o = s.byRun[i], n = s.byRun[j];
      if (!o && !n) return;
      var row = { benchmark: s.benchmark, unit: s.unit, s: s, old: o, new: n, delta: NaN, p: NaN, q: NaN };
      if (s.cond) {
        row.verdict = "run condition";
        if (o && n) row.delta = delta(o.median, n.median);
      } else if (!n) row.verdict = "only in old";
      else if (!o) row.verdict = "only in new";
      else {
        row.delta = delta(o.median, n.median);
        if (minP(o.xs.length, n.xs.length) >= data.alpha) row.verdict = "too few samples";
        else row.p = mannWhitney(o.xs, n.xs);
      }
      rows.push(row);
    });
    // Benjamini–Hochberg over the rows tested (gate.adjust).
    var tested = rows.filter(function (r) { return !isNaN(r.p); });
    tested.sort(function (a, b) { return a.p - b.p; }); // stable
    var q = 1, mm = tested.length;
    for (var k = mm - 1; k >= 0; k--) { q = Math.min(q, tested[k].p * mm / (k + 1)); tested[k].q = q; }
    tested.forEach(function (r) {
      if (!(r.q < data.alpha) || Math.abs(r.delta) <= data.threshold) r.verdict = "no significant change";
      else if (r.s.better === "unknown") r.verdict = "unknown direction";
      else if ((r.delta > 0) === (r.s.better === "higher")) r.verdict = "improvement";
      else r.verdict = "regression";
      var d = disturbed[r.benchmark];
      if (r.verdict === "regression" && d && (d[0] || d[1])) r.verdict = "disturbed: rerun";
    });
    return { rows: rows, tested: mm };
  }
  // For the browser test: how many series' samples are decoded.
  window.headspaceDecoded = function () {
    var n = 0;
    data.machines.forEach(function (m) { m.series.forEach(function (s) { if (s.pts) n++; }); });
    return n;
  };
  // For the browser test: the page's compare, in plain values.
  window.headspaceCompare = function (mi, i, j) {
    return compare(data.machines[mi], i, j).rows.map(function (r) {
      return { benchmark: r.benchmark, unit: r.unit, verdict: r.verdict, delta: r.delta, p: r.p, q: r.q,
        old: r.old ? r.old.median : null, new: r.new ? r.new.median : null };
    });
  };
  var rank = { "regression": 0, "disturbed: rerun": 1, "improvement": 2, "unknown direction": 3 };
  function showCompare(m, out, i, j) {
    out.textContent = "";
    if (i === j) { out.textContent = "pick two different runs"; return; }
    var swapped = i > j;
    if (swapped) { var t = i; i = j; j = t; }
    var c = compare(m, i, j);
    var regs = c.rows.filter(function (r) { return r.verdict === "regression"; }).length;
    var imps = c.rows.filter(function (r) { return r.verdict === "improvement"; }).length;
    [(swapped ? "(older run shown as old) " : "") + "old: " + m.runs[i].commit + " (" + m.runs[i].date + ")",
     "new: " + m.runs[j].commit + " (" + m.runs[j].date + ")",
     "medians ± 95% interval; Mann–Whitney U test, false discovery rate " + data.alpha + " over " + c.tested +
       " tested (Benjamini–Hochberg); threshold " + (100 * data.threshold) + "%",
     (regs ? "REGRESSION: " + regs : "no regression") + ", " + imps + " improvement" + (imps === 1 ? "" : "s") + " in " + c.rows.length + " metrics"]
      .forEach(function (line) { out.appendChild(el("div", {}, line)); });
    var rows = c.rows.slice().sort(function (a, b) {
      var ra = a.verdict in rank ? rank[a.verdict] : 9, rb = b.verdict in rank ? rank[b.verdict] : 9;
      return ra - rb;
    });
    var table = el("table"), head = el("tr");
    ["benchmark", "unit", "old", "new", "change", "q", "verdict"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
    table.appendChild(head);
    rows.forEach(function (r) {
      var tr = el("tr", { "class": r.verdict === "regression" ? "reg" : r.verdict === "improvement" ? "imp" : "" });
      [r.benchmark, r.unit, r.old ? withInterval(r.old, r.s) : "-", r.new ? withInterval(r.new, r.s) : "-",
       isNaN(r.delta) ? "-" : pct(r.delta), isNaN(r.q) ? "-" : r.q.toPrecision(2), r.verdict]
        .forEach(function (v) { tr.appendChild(el("td", {}, v)); });
      table.appendChild(tr);
    });
    out.appendChild(table);
  }

  // ---- Charts.
  // changeMarkers draws a dashed vertical line at each change point:
  // red for a regression, green for an improvement, dotted orange for a
  // suspected step.
  function changeMarkers(changes) {
    return { hooks: { draw: [function (u) {
      var ctx = u.ctx;
      ctx.save();
      changes.forEach(function (c) {
        var x = Math.round(u.valToPos(c.run - 0.5, "x", true));
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        var suspected = c.kind.indexOf("suspected") === 0;
        ctx.strokeStyle = suspected ? "#e80" : c.kind === "regression" ? "#d33" : c.kind === "improvement" ? "#2a2" : "#888";
        ctx.lineWidth = 2 * devicePixelRatio;
        ctx.setLineDash(suspected ? [2 * devicePixelRatio, 3 * devicePixelRatio] : [5 * devicePixelRatio, 4 * devicePixelRatio]);
        ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
      });
      ctx.restore();
      u.root.setAttribute("data-drawn", "1");
    }] } };
  }
  // hoverBox shows the night under the cursor: commit, date, value,
  // interval, and the change point that starts there.
  function hoverBox(m, s) {
    return { hooks: { setCursor: [function (u) {
      var i = u.cursor.idx, p = i == null ? null : s.byRun[i];
      if (!p) { tip.hidden = true; return; }
      var run = m.runs[i];
      tip.textContent = "";
      [run.commit + "  " + run.date, s.unit + ": " + withInterval(p, s),
       "95% interval: " + (isFinite(p.lo) ? p.lo.toPrecision(4) + " – " + p.hi.toPrecision(4) : "∞") + " (n=" + p.xs.length + ")"]
        .concat(s.marks.filter(function (c) { return c.run === i; }).map(function (c) {
          return (c.kind.indexOf("suspected") === 0 ? "suspected step: " : "change point: ") + pct(c.delta) + " (" + c.before + " → " + c.after + "), " + c.kind;
        }))
        .forEach(function (line, k) { tip.appendChild(el(k === 0 ? "b" : "div", {}, line)); if (k === 0) tip.appendChild(el("br")); });
      var r = u.over.getBoundingClientRect();
      tip.style.left = (r.left + u.cursor.left + 12) + "px";
      tip.style.top = (r.top + u.cursor.top + 12) + "px";
      tip.hidden = false;
    }] } };
  }

  // A machine's range of nights, shared by its charts: null is all.
  function setRange(m, lo, hi, from) {
    var n = m.runs.length;
    if (lo != null) {
      var w = Math.max(hi - lo, 2);
      lo = Math.max(-0.5, Math.min(lo, n - 0.5 - w)); hi = Math.min(n - 0.5, lo + w);
      if (lo <= -0.5 && hi >= n - 0.5) lo = hi = null;
    }
    m.range = lo == null ? null : [lo, hi];
    m.charts.forEach(function (u) { if (u !== from) applyRange(m, u); });
    m.zoomLabel.textContent = m.range ? "nights " + m.runs[Math.ceil(m.range[0])].date.slice(0, 10) + " – " +
      m.runs[Math.floor(m.range[1])].date.slice(0, 10) : "all " + n + " nights";
  }
  function applyRange(m, u) {
    u.syncing = true;
    u.setScale("x", m.range ? { min: m.range[0], max: m.range[1] } : { min: -0.5, max: m.runs.length - 0.5 });
    u.syncing = false;
  }

  function drawChart(m, s, box) {
    var n = m.runs.length, xs = [], med = [], lo = [], hi = [];
    for (var r = 0; r < n; r++) { xs.push(r); med.push(null); lo.push(null); hi.push(null); }
    points(s).forEach(function (p) {
      med[p.run] = p.median;
      lo[p.run] = isFinite(p.lo) ? p.lo : null; hi[p.run] = isFinite(p.hi) ? p.hi : null;
    });
    var opts = {
      width: 400, height: 200,
      legend: { show: false },
      cursor: { points: { size: 7 }, drag: { x: true, y: false, setScale: true } },
      // Autoscaled (drawn, double-clicked), the x scale holds the data's
      // extent, 0 … n-1: then the machine's range; else what was set.
      scales: { x: { time: false, range: function (u, a, b) { return a === 0 && b === n - 1 ? m.range || [-0.5, n - 0.5] : [a, b]; } } },
      axes: [
        { values: function (u, splits) { return splits.map(function (v) { return Number.isInteger(v) && m.runs[v] ? m.runs[v].date.slice(5, 10) : ""; }); },
          incrs: [1, 2, 5, 7, 14, 30, 60, 91, 182, 365, 730, 1461], size: 30, font: "10px sans-serif" },
        { size: 60, font: "10px sans-serif" }
      ],
      series: [
        {},
        { label: "median", stroke: "#2563eb", width: 1.5, spanGaps: true, points: { show: function (u) { return u.series[1].idxs[1] - u.series[1].idxs[0] < 120; }, size: 5 } },
        { label: "lo", stroke: "rgba(37,99,235,0.25)", width: 0, points: { show: false } },
        { label: "hi", stroke: "rgba(37,99,235,0.25)", width: 0, points: { show: false } }
      ],
      bands: [{ series: [3, 2], fill: "rgba(37,99,235,0.15)" }],
      hooks: { setScale: [function (u, key) {
        if (key !== "x" || u.syncing) return;
        var sc = u.scales.x;
        setRange(m, sc.min, sc.max, u);
      }] },
      plugins: [changeMarkers(s.marks), hoverBox(m, s)]
    };
    var u = new uPlot(opts, [xs, med, lo, hi], box);
    u.over.addEventListener("mouseleave", function () { tip.hidden = true; });
    u.over.addEventListener("dblclick", function () { setRange(m, null); });
    m.charts.push(u);
  }

  // idle runs f once the browser is idle (Safari has no requestIdleCallback).
  function idle(f) {
    if (window.requestIdleCallback) requestIdleCallback(function () { f(); }, { timeout: 500 }); else setTimeout(f, 50);
  }
  // afterFrame runs f after the next frame is drawn.
  function afterFrame(f) { requestAnimationFrame(function () { setTimeout(f, 0); }); }
  // Each chart is a placeholder until it comes near the viewport: one in
  // view is drawn at once, one within 200 px of it after the next frame,
  // and a compare (it decodes every series of its machine) once the
  // browser is idle after that.
  var pending = new Map();
  var observer = new IntersectionObserver(function (entries) {
    var later = [];
    entries.forEach(function (e) {
      if (!e.isIntersecting || !pending.has(e.target)) return;
      var job = pending.get(e.target), r = e.boundingClientRect;
      pending.delete(e.target);
      observer.unobserve(e.target);
      if (!job[1]) afterFrame(function () { idle(job[0].show, 2000); });
      else if (r.bottom > 0 && r.top < innerHeight) drawChart(job[0], job[1], e.target);
      else later.push([job[0], job[1], e.target]);
    });
    if (later.length) afterFrame(function () { later.forEach(function (j) { drawChart(j[0], j[1], j[2]); }); });
  }, { rootMargin: "200px" });
  function placeholder(grid, m, s, title) {
    var box = el("div", { "class": "chart" });
    box.appendChild(el("h4", {}, title));
    grid.appendChild(box);
    pending.set(box, [m, s]);
    return box;
  }
  function title(s) { return s.benchmark + " · " + s.unit + " (" + s.better + " is better)"; }

  var changed = document.getElementById("changed-charts");
  data.machines.forEach(function (m, mi) {
    m.charts = [];
    m.range = null;
    m.series.forEach(function (s) { s.changes = s.changes || []; s.marks = s.suspect ? s.changes.concat([s.suspect]) : s.changes; });
    m.series.forEach(function (s) {
      if (s.marks.length) placeholder(changed, m, s, (data.machines.length > 1 ? m.key + ": " : "") + title(s));
    });
    var sec = el("section", { id: "m-" + mi });
    sec.appendChild(el("h2", {}, m.key + " (" + m.runs.length + " runs)"));
    // Two runs picked: the gate's comparison of them.
    var pick = el("div", { "class": "pick" });
    pick.appendChild(el("span", {}, "compare "));
    var a = el("select", { id: "old-" + mi }), b = el("select", { id: "new-" + mi });
    for (var i = m.runs.length - 1; i >= 0; i--) {
      var label = m.runs[i].commit.slice(0, 12) + " · " + m.runs[i].date;
      a.appendChild(el("option", { value: i }, label));
      b.appendChild(el("option", { value: i }, label));
    }
    a.value = Math.max(0, m.runs.length - 2); b.value = m.runs.length - 1;
    pick.appendChild(a); pick.appendChild(el("span", {}, " with ")); pick.appendChild(b);
    var out = el("div", { "class": "cmp", id: "cmp-" + mi });
    m.show = function () { showCompare(m, out, +a.value, +b.value); };
    m.pick = function (i, j) { a.value = i; b.value = j; m.show(); };
    a.onchange = m.show; b.onchange = m.show;
    sec.appendChild(pick); sec.appendChild(out);
    // Compared when it comes into view (it decodes every series of the
    // machine).
    if (m.runs.length < 2) out.textContent = "one run: nothing to compare yet"; else pending.set(out, [m]);
    // Zoom and pan: drag across a chart to zoom, double-click for all.
    var zoom = el("div", { "class": "zoom" });
    var buttons = [["all", function () { setRange(m, null); }],
      ["last 90", function () { setRange(m, m.runs.length - 90.5, m.runs.length - 0.5); }],
      ["last 30", function () { setRange(m, m.runs.length - 30.5, m.runs.length - 0.5); }],
      ["◀", function () { var r = m.range; if (r) setRange(m, r[0] - (r[1] - r[0]) / 2, r[1] - (r[1] - r[0]) / 2); }],
      ["▶", function () { var r = m.range; if (r) setRange(m, r[0] + (r[1] - r[0]) / 2, r[1] + (r[1] - r[0]) / 2); }],
      ["zoom out", function () { var r = m.range; if (r) setRange(m, r[0] - (r[1] - r[0]) / 2, r[1] + (r[1] - r[0]) / 2); }]];
    buttons.forEach(function (bt) { var e = el("button", { type: "button" }, bt[0]); e.onclick = bt[1]; zoom.appendChild(e); });
    m.zoomLabel = el("span", {}, "all " + m.runs.length + " nights");
    zoom.appendChild(m.zoomLabel);
    zoom.appendChild(el("span", {}, "drag across a chart to zoom, double-click for all"));
    sec.appendChild(zoom);
    var grid = el("div", { "class": "charts" });
    sec.appendChild(grid);
    root.appendChild(sec);
    m.series.forEach(function (s) { placeholder(grid, m, s, title(s)); });
  });
  document.querySelectorAll("a.cmp-link").forEach(function (l) {
    l.addEventListener("click", function () {
      var m = data.machines[+l.getAttribute("data-m")];
      if (m) m.pick(+l.getAttribute("data-old"), +l.getAttribute("data-new"));
    });
  });
  performance.mark("headspace-built");
  pending.forEach(function (job, box) { observer.observe(box); });
  document.body.setAttribute("data-charts", String(document.querySelectorAll(".chart").length));
})();
