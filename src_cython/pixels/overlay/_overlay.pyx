# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Alpha-blend gradient shapes over a uint8 frame in place: kernel of mantis_fast.pixels.overlay.

One call draws a list of shapes ("ops") in order. Rows are independent, so the rows are shared
between threads (OpenMP ``prange`` when built with it) and every pixel still sees the shapes in
list order: the result is the same as drawing them one after another.

Geometry is in pixel-centre coordinates: pixel (column i, row j) is the unit square centred on
(i, j). Three shapes:

``OP_DISC``     centre (cx, cy), radius r > 0. Coverage ``clamp(r + 0.5 - d, 0, cap)`` with
                ``d`` the distance from the pixel centre to (cx, cy): an anti-aliased edge one
                pixel wide; ``cap = min(1, pi r^2)`` keeps a sub-pixel disc from covering more
                than its area. Gradient position ``t = d * (1 / r)`` (a canvas
                ``createRadialGradient(cx, cy, 0, cx, cy, r)`` filled over ``arc(cx, cy, r)``).
``OP_RECT``     outer edges (x0, y0, x1, y1) and an optional inner hole (x0, y0, x1, y1), both in
                continuous coordinates. Coverage is the exact area of the pixel inside the outer
                rectangle minus the area inside the hole (so a bordered frame is one shape with
                exact coverage at fractional edges). Gradient centre (gx, gy), radius rg:
                ``t = |pixel - (gx, gy)| * (1 / rg)``.
``OP_SEGMENT``  a line (x0, y0) -> (x1, y1) of half-width h with butt ends. With ``u`` the
                position along the line and ``v`` the distance from it, coverage is
                ``clamp(h + 0.5 - v, 0, min(1, 2h)) * clamp(0.5 + min(u, length - u), 0, 1)``.
                Solid colour: ``t = 0``.

Colour at ``t`` comes from the shape's gradient stops (position, r, g, b, a; r, g, b in
0..255 and a in 0..1, positions sorted): piecewise linear in straight (not premultiplied) RGBA,
as a canvas gradient interpolates. ``t`` at or before the first stop gives the first stop,
after the last stop the last one; otherwise with ``k`` the first stop whose position is
``>= t`` the colour is interpolated between stops ``k - 1`` and ``k`` (stops sharing a position
make a hard edge: at exactly that position the first of them, just past it the last). It is
evaluated as the first stop plus one clamped ramp per pair of neighbouring stops.

Blending is straight-alpha "over" onto an opaque frame; each colour byte becomes::

    a   = stop_alpha(t) * shape_alpha * coverage                  (0 <= a <= 1)
    out = floor(dst + (colour - dst) * a + 0.5)                   in float32 arithmetic

Two paths compute it. The float32 path fuses distance, coverage, gradient and blend, four
pixels per SSE2 step; it takes discs and gradient rectangles whose distances stay within a few
thousand pixels and whose stops have no hard edge and no ramp narrower than 1e-3 (there
float32 errors stay below ~1e-3 px of geometry and ~0.03 of a colour level). Everything else
(solid shapes, hard edges, huge geometry) takes the float64 path: geometry, coverage and
gradient in float64, then only the blend above in float32. Either way the bytes equal the
float64 value of the formula rounded half up, except where that value lies within a few 1e-3
of a half-integer: there they may be 1 LSB away.

The colour channels are 0, 1, 2 in RGB order, or in BGR order when ``bgr`` is set. A fourth
byte (X11 padding or alpha) keeps its value.
"""

from cython.parallel cimport prange, threadid
from libc.math cimport M_PI, ceil, floor, hypot, sqrt
from libc.stdint cimport uint8_t
from libc.stdlib cimport free, malloc

from mantis_omp cimport mantis_omp_max_threads

cdef extern from "overlay_spans.h":
    void mantis_blend_span(uint8_t *p, Py_ssize_t n, int nch, const float *a,
                           const float *colour, const float *rgb) noexcept nogil
    void mantis_gradient_span(uint8_t *p, Py_ssize_t n, int nch, int bgr, float dx0, float dy,
                              float ginv, const double *cover, float reach, float cap,
                              const float *table, Py_ssize_t rows, float shape_alpha,
                              int uniform) noexcept nogil

# Shape kinds and the columns of the ops table (see the .pyi stub).
OP_DISC = 0
OP_RECT = 1
OP_SEGMENT = 2
OP_COLUMNS = 15
STOP_COLUMNS = 5

# Coordinates are limited to this magnitude by the Python layer: squares stay exact enough and
# no bound computed from them can overflow a Py_ssize_t.
COORD_LIMIT = 1e7
# Geometry up to this many pixels may take the float32 path (see well_conditioned).
cdef double float32_extent = 4096.0
FLOAT32_EXTENT = float32_extent

cdef enum:
    KIND_DISC = 0
    KIND_RECT = 1
    KIND_SEGMENT = 2
    NCOLS = 15
    NSTOP = 5     # a stop as given: position, r, g, b, a
    NSEG = 9      # a row of the ramp table (see expand_stops)
    NSCRATCH = 5  # doubles of per-thread scratch per column (see draw_row)


cdef struct Shape:
    int kind
    int solid                  # one colour and alpha: no distance or gradient per pixel
    int uniform                # every stop has the same r, g, b: only alpha varies
    int fast                   # well-conditioned gradient: the float32 path
    const float *ftable        # the ramp table in float32 (fast shapes)
    const double *stops        # nstops rows of the ramp table (see expand_stops)
    Py_ssize_t nstops
    double alpha               # shape alpha, multiplies every stop's alpha
    double gx, gy, ginv        # gradient centre and 1 / gradient radius
    double a0, a1, a2, a3      # disc: cx, cy, r, r + 0.5; rect: outer; segment: ends
    double b0, b1, b2, b3      # rect: hole; segment: unit direction (ux, uy), length, h
    int hole                   # rect has a non-empty hole
    double cap                 # most coverage a pixel can get: min(1, area of a thin shape)
    Py_ssize_t row0, row1      # rows touched, inclusive, clipped to the image
    Py_ssize_t col0, col1      # columns touched, inclusive, clipped to the image


cdef struct Row:
    uint8_t *pixels            # the image row
    Py_ssize_t y
    int nch                    # bytes per pixel
    int bgr
    double *dist               # per-thread scratch: a value per column of the span
    double *cover
    float *alpha
    float *colour              # nch values per column (+ 1 spare)


def max_threads():
    """Threads a parallel region may use (1 when built without OpenMP)."""
    return mantis_omp_max_threads()


cdef inline double clamp01(double v) noexcept nogil:
    return 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)


cdef inline double overlap(double p, double lo, double hi) noexcept nogil:
    """Length of [p - 0.5, p + 0.5] inside [lo, hi] (0 when they do not meet)."""
    cdef double a = p - 0.5 if p - 0.5 > lo else lo
    cdef double b = p + 0.5 if p + 0.5 < hi else hi
    return b - a if b > a else 0.0


cdef inline Py_ssize_t clip_index(double v, Py_ssize_t hi) noexcept nogil:
    """v (an integral double) clipped into [-1, hi + 1] and converted."""
    if v < -1.0:
        return -1
    if v > <double>(hi + 1):
        return hi + 1
    return <Py_ssize_t>v


cdef void paint(const Row *r, const Shape *s, Py_ssize_t x0, Py_ssize_t n) noexcept nogil:
    """The float64 path: blend columns x0 .. x0 + n - 1, whose coverage is in r.cover[0 .. n)
    and, for a gradient, distance to the gradient centre in r.dist[0 .. n)."""
    cdef const double *st = s.stops
    cdef const double *row
    cdef float rgb[3]
    cdef double c[4]
    cdef double t, u
    cdef Py_ssize_t i, k
    cdef int j, nch = r.nch, red = 2 if r.bgr else 0, blue = 0 if r.bgr else 2
    rgb[red], rgb[1], rgb[blue] = <float>st[1], <float>st[2], <float>st[3]
    if s.solid:
        for i in range(n):
            r.alpha[i] = <float>(r.cover[i] * (st[4] * s.alpha))
        mantis_blend_span(r.pixels + x0 * nch, n, nch, r.alpha, NULL, rgb)
        return
    for i in range(n):
        t = r.dist[i] * s.ginv
        for j in range(4):
            c[j] = st[1 + j]
        for k in range(1, s.nstops):
            row = st + k * NSEG
            if row[6] != 0.0:
                u = 1.0 if t > row[0] else 0.0
            else:
                u = t - row[0]
                u = u if u > 0.0 else 0.0
                u = u if u < row[1] else row[1]
            for j in range(4):
                c[j] = c[j] + u * row[2 + j]
        r.colour[i * nch + red] = <float>c[0]
        r.colour[i * nch + 1] = <float>c[1]
        r.colour[i * nch + blue] = <float>c[2]
        r.colour[i * nch + 3] = 0.0  # lane 3 of a 4-byte pixel (or the next red, rewritten)
        r.alpha[i] = <float>(r.cover[i] * (c[3] * s.alpha))
    mantis_blend_span(r.pixels + x0 * nch, n, nch, r.alpha, r.colour, rgb)


cdef inline void distance_row(double *d, Py_ssize_t n, double x0, double cx,
                              double dy) noexcept nogil:
    """d[i] = sqrt(dx * dx + dy * dy) with dx = (x0 + i) - cx."""
    cdef Py_ssize_t i
    cdef double dx
    for i in range(n):
        dx = (x0 + i) - cx
        d[i] = sqrt(dx * dx + dy * dy)


cdef void disc_row(const Row *r, const Shape *s) noexcept nogil:
    cdef double dy = r.y - s.a1, reach = s.a3, h2 = reach * reach - dy * dy, h, cover
    cdef double cap = s.cap
    cdef Py_ssize_t i, x0, x1, n
    if h2 <= 0.0:
        return
    h = sqrt(h2)
    x0 = clip_index(ceil(s.a0 - h), s.col1)
    x1 = clip_index(floor(s.a0 + h), s.col1)
    x0 = x0 if x0 > s.col0 else s.col0
    x1 = x1 if x1 < s.col1 else s.col1
    n = x1 - x0 + 1
    if n <= 0:
        return
    if s.fast:
        mantis_gradient_span(r.pixels + x0 * r.nch, n, r.nch, r.bgr, <float>(x0 - s.a0),
                             <float>dy, <float>s.ginv, NULL, <float>reach, <float>cap,
                             s.ftable, s.nstops, <float>s.alpha, s.uniform)
        return
    distance_row(r.dist, n, <double>x0, s.a0, dy)
    for i in range(n):
        cover = reach - r.dist[i]
        r.cover[i] = 0.0 if cover < 0.0 else (cap if cover > cap else cover)
    paint(r, s, x0, n)


cdef inline void add_overlap(double *cover, Py_ssize_t n, double lo, double hi,
                             double value) noexcept nogil:
    """cover[i] += value * (length of [i, i + 1] inside [lo, hi]) for 0 <= i < n. Pixels
    wholly inside take value exactly, in a loop a compiler vectorises; only the partly covered
    ones (within 2 of either end) compute an overlap."""
    cdef double a, b
    cdef Py_ssize_t i, k, full0, full1, end0, end1
    if not (hi > lo and hi > 0.0 and lo < n):
        return
    lo = lo if lo > -1.0 else -1.0  # nothing left of pixel 0 or right of pixel n - 1 matters
    hi = hi if hi < n + 1.0 else n + 1.0
    full0 = <Py_ssize_t>ceil(lo if lo > 0.0 else 0.0)
    full1 = <Py_ssize_t>floor(hi if hi < n else <double>n) - 1
    for i in range(full0, full1 + 1):
        cover[i] = cover[i] + value
    end0 = <Py_ssize_t>floor(lo)
    end1 = <Py_ssize_t>ceil(hi) - 1
    # Partly covered pixels lie within 2 of either end (3 at most when nothing is whole).
    for k in range(6):
        i = end0 + k if k < 3 else end1 - (k - 3)
        if k >= 3 and i <= end0 + 2:
            break
        if i <= end1 and 0 <= i < n and not (full0 <= i <= full1):
            a = i if i > lo else lo
            b = i + 1.0 if i + 1.0 < hi else hi
            if b > a:
                cover[i] = cover[i] + (b - a) * value


cdef void rect_span(const Row *r, const Shape *s, Py_ssize_t x0, Py_ssize_t x1, double oy,
                    double iy) noexcept nogil:
    cdef Py_ssize_t i, n = x1 - x0 + 1
    cdef double *cover = r.cover
    if n <= 0:
        return
    # overlap(x, lo, hi) with the pixel's span [x - 0.5, x + 0.5] shifted to [i, i + 1]
    for i in range(n):
        cover[i] = 0.0
    add_overlap(cover, n, s.a0 + 0.5 - x0, s.a2 + 0.5 - x0, oy)
    if s.hole:
        add_overlap(cover, n, s.b0 + 0.5 - x0, s.b2 + 0.5 - x0, -iy)
        for i in range(n):
            cover[i] = cover[i] if cover[i] > 0.0 else 0.0
    if s.fast:
        mantis_gradient_span(r.pixels + x0 * r.nch, n, r.nch, r.bgr, <float>(x0 - s.gx),
                             <float>(r.y - s.gy), <float>s.ginv, cover, 0.0, 0.0, s.ftable,
                             s.nstops, <float>s.alpha, s.uniform)
        return
    if not s.solid:
        distance_row(r.dist, n, <double>x0, s.gx, r.y - s.gy)
    paint(r, s, x0, n)


cdef void rect_row(const Row *r, const Shape *s) noexcept nogil:
    cdef double oy = overlap(<double>r.y, s.a1, s.a3), iy = 0.0
    cdef Py_ssize_t skip0, skip1
    if oy <= 0.0:
        return
    if s.hole:
        iy = overlap(<double>r.y, s.b1, s.b3)
        if iy >= 1.0:
            # On a row wholly inside the hole, the columns wholly inside it have coverage 0.
            skip0 = clip_index(ceil(s.b0 + 0.5), s.col1)
            skip1 = clip_index(floor(s.b2 - 0.5), s.col1)
            if skip0 <= skip1:
                rect_span(r, s, s.col0, skip0 - 1 if skip0 - 1 < s.col1 else s.col1, oy, iy)
                rect_span(r, s, skip1 + 1 if skip1 + 1 > s.col0 else s.col0, s.col1, oy, iy)
                return
    rect_span(r, s, s.col0, s.col1, oy, iy)


cdef inline int band(double coef, double offset, double lo, double hi,
                     double *xlo, double *xhi) noexcept nogil:
    """Narrow (xlo, xhi) to the x with lo < coef * x + offset < hi; 0 when nothing is left."""
    cdef double p, q
    if coef == 0.0:
        return 1 if lo < offset < hi else 0
    p = (lo - offset) / coef
    q = (hi - offset) / coef
    if coef < 0.0:
        p, q = q, p
    if p > xlo[0]:
        xlo[0] = p
    if q < xhi[0]:
        xhi[0] = q
    return 1 if xlo[0] < xhi[0] else 0


cdef void segment_row(const Row *r, const Shape *s) noexcept nogil:
    cdef double ux = s.b0, uy = s.b1, length = s.b2, h = s.b3
    cdef double ry = r.y - s.a1, xlo = s.col0 - 1.0, xhi = s.col1 + 1.0
    cdef double u, v, along, rx, cap = s.cap
    cdef Py_ssize_t i, x0, x1, n
    # u = (x - x0) * ux + ry * uy and v = ry * ux - (x - x0) * uy are linear in x: the pixels
    # with any coverage form one run of the row.
    if not band(ux, ry * uy - s.a0 * ux, -0.5, length + 0.5, &xlo, &xhi):
        return
    if not band(-uy, ry * ux + s.a0 * uy, -(h + 0.5), h + 0.5, &xlo, &xhi):
        return
    x0 = clip_index(ceil(xlo), s.col1)
    x1 = clip_index(floor(xhi), s.col1)
    x0 = x0 if x0 > s.col0 else s.col0
    x1 = x1 if x1 < s.col1 else s.col1
    n = x1 - x0 + 1
    if n <= 0:
        return
    for i in range(n):
        rx = (x0 + i) - s.a0
        u = rx * ux + ry * uy
        v = ry * ux - rx * uy
        v = -v if v < 0.0 else v
        along = u if u < length - u else length - u
        v = h + 0.5 - v
        r.cover[i] = (0.0 if v < 0.0 else (cap if v > cap else v)) * clamp01(0.5 + along)
    paint(r, s, x0, n)


cdef void shape_bounds(Shape *s, Py_ssize_t height, Py_ssize_t width) noexcept nogil:
    """Rows and columns a shape can touch, clipped to the image (row0 > row1 when none)."""
    cdef double lx, hx, ly, hy, pad
    if s.kind == KIND_DISC:
        lx, hx, ly, hy = s.a0 - s.a3, s.a0 + s.a3, s.a1 - s.a3, s.a1 + s.a3
    elif s.kind == KIND_RECT:
        lx, hx, ly, hy = s.a0 - 0.5, s.a2 + 0.5, s.a1 - 0.5, s.a3 + 0.5
    else:
        pad = s.b3 + 1.0
        lx = (s.a0 if s.a0 < s.a2 else s.a2) - pad
        hx = (s.a0 if s.a0 > s.a2 else s.a2) + pad
        ly = (s.a1 if s.a1 < s.a3 else s.a3) - pad
        hy = (s.a1 if s.a1 > s.a3 else s.a3) + pad
    s.col0 = clip_index(ceil(lx), width - 1)
    s.col1 = clip_index(floor(hx), width - 1)
    s.row0 = clip_index(ceil(ly), height - 1)
    s.row1 = clip_index(floor(hy), height - 1)
    s.col0 = s.col0 if s.col0 > 0 else 0
    s.row0 = s.row0 if s.row0 > 0 else 0
    s.col1 = s.col1 if s.col1 < width - 1 else width - 1
    s.row1 = s.row1 if s.row1 < height - 1 else height - 1


cdef void expand_stops(const double *stops, Py_ssize_t n, double *table) noexcept nogil:
    """Stop rows (position, r, g, b, a) -> the ramp table (see the C helpers): row 0 the
    first stop, row k the step from stop k - 1 to k as (position, width, dr, dg, db, da, hard)
    with d* the change per unit t, or for a hard edge (width 0) the whole jump."""
    cdef Py_ssize_t k, j
    cdef double width
    cdef const double *lo
    cdef const double *hi
    cdef double *row
    for j in range(NSEG):
        table[j] = stops[j] if j < NSTOP else 0.0
    for k in range(1, n):
        lo = stops + (k - 1) * NSTOP
        hi = lo + NSTOP
        row = table + k * NSEG
        width = hi[0] - lo[0]
        if not width > 1e-300:  # keeps slope * width finite (positions are 0..1)
            width = 0.0
        row[0] = lo[0]
        row[1] = width
        for j in range(1, NSTOP):
            row[1 + j] = (hi[j] - lo[j]) / width if width > 0.0 else hi[j] - lo[j]
        row[6] = 0.0 if width > 0.0 else 1.0
        row[7] = 0.0
        row[8] = 0.0


cdef int build_shape(Shape *s, const double *op, const double *stops, double *seg,
                     Py_ssize_t height, Py_ssize_t width, int fast_path) noexcept nogil:
    """Fill s from one ops row (its stops already checked); 0 when it draws nothing. seg has
    room for 2 * nstops ramp rows: the float64 table, then its float32 copy."""
    cdef double length
    cdef float *ftable
    cdef Py_ssize_t k
    s.kind = <int>op[0]
    s.nstops = <Py_ssize_t>op[2]
    expand_stops(stops + (<Py_ssize_t>op[1]) * NSTOP, s.nstops, seg)
    s.stops = seg
    s.solid = s.nstops == 1 or s.kind == KIND_SEGMENT
    s.uniform = 1
    for k in range(1, s.nstops):
        if seg[k * NSEG + 2] != 0.0 or seg[k * NSEG + 3] != 0.0 or seg[k * NSEG + 4] != 0.0:
            s.uniform = 0
    s.alpha = op[3]
    s.gx, s.gy = op[4], op[5]
    s.ginv = 1.0 / op[6] if op[6] > 0.0 else 0.0
    s.a0, s.a1, s.a2, s.a3 = op[7], op[8], op[9], op[10]
    s.b0, s.b1, s.b2, s.b3 = op[11], op[12], op[13], op[14]
    s.hole = 0
    if not s.alpha > 0.0:
        return 0
    if s.kind == KIND_DISC:
        s.cap = M_PI * s.a2 * s.a2
        if not s.cap > 0.0:
            return 0
        s.cap = s.cap if s.cap < 1.0 else 1.0
        s.a3 = s.a2 + 0.5
        s.gx, s.gy = s.a0, s.a1
        s.ginv = 1.0 / s.a2
    elif s.kind == KIND_RECT:
        if not (s.a0 < s.a2 and s.a1 < s.a3):
            return 0
        s.hole = s.b0 < s.b2 and s.b1 < s.b3
    else:
        s.b3 = op[11]
        length = hypot(s.a2 - s.a0, s.a3 - s.a1)
        if not (length > 0.0 and s.b3 > 0.0):
            return 0
        s.cap = 2.0 * s.b3 if s.b3 < 0.5 else 1.0
        s.b0 = (s.a2 - s.a0) / length
        s.b1 = (s.a3 - s.a1) / length
        s.b2 = length
    shape_bounds(s, height, width)
    s.fast = fast_path and well_conditioned(s, height, width)
    if s.fast:
        ftable = <float *>(seg + s.nstops * NSEG)
        for k in range(s.nstops * NSEG):
            ftable[k] = <float>seg[k]
        s.ftable = ftable
    return 1 if s.row0 <= s.row1 and s.col0 <= s.col1 else 0


cdef int well_conditioned(const Shape *s, Py_ssize_t height, Py_ssize_t width) noexcept nogil:
    """Whether float32 keeps a gradient shape within the 1-LSB budget: distances in the
    thousands of pixels (errors ~1e-3 px) and ramps no steeper than 255 per 1e-3 of t (colour
    errors ~0.03), no hard edge (whose side must be decided in float64)."""
    cdef Py_ssize_t k
    cdef double limit = float32_extent, radius
    if s.kind == KIND_SEGMENT or (s.kind == KIND_RECT and s.solid):
        return 0
    radius = 1.0 / s.ginv if s.ginv > 0.0 else 0.0
    if not (width <= limit and height <= limit and -limit <= s.gx <= limit
            and -limit <= s.gy <= limit and radius <= limit):
        return 0
    if s.kind == KIND_DISC and not (-limit <= s.a0 <= limit and -limit <= s.a1 <= limit):
        return 0
    for k in range(1, s.nstops):
        if s.stops[k * NSEG + 6] != 0.0 or s.stops[k * NSEG + 1] < 1e-3:
            return 0
    return 1


cdef void draw_row(uint8_t *pixels, Py_ssize_t y, int nch, int bgr, const Shape *shapes,
                   Py_ssize_t count, double *scratch, Py_ssize_t width) noexcept nogil:
    cdef Row r
    cdef Py_ssize_t k
    cdef const Shape *s
    r.pixels, r.y, r.nch, r.bgr = pixels, y, nch, bgr
    r.dist, r.cover = scratch, scratch + width
    r.alpha = <float *>(scratch + 2 * width)  # width floats
    r.colour = <float *>(scratch + 3 * width)  # 4 * width floats
    for k in range(count):
        s = &shapes[k]
        if y < s.row0 or y > s.row1:
            continue
        if s.kind == KIND_DISC:
            disc_row(&r, s)
        elif s.kind == KIND_RECT:
            rect_row(&r, s)
        else:
            segment_row(&r, s)


def composite(uint8_t[:, :, :] image, const double[:, ::1] ops, const double[:, ::1] stops,
              bint bgr, int threads, bint fast_path=True):
    """Draw every row of ``ops`` over ``image`` in order (see the module docstring).

    ``image`` rows may have any stride (crops, flipped views); its pixels must be contiguous.
    ``fast_path=False`` keeps every shape on the float64 path (tests compare both).
    """
    cdef Py_ssize_t height = image.shape[0], width = image.shape[1], n = ops.shape[0]
    cdef Py_ssize_t nstops = stops.shape[0], i, used = 0, y, total = 0
    cdef int nch = <int>image.shape[2]
    cdef double first, count, kind
    cdef Shape *shapes = NULL
    cdef double *segs = NULL
    cdef double *scratch = NULL
    if (ops.shape[1] != NCOLS or stops.shape[1] != NSTOP or not 3 <= nch <= 4
            or image.strides[2] != 1 or image.strides[1] != nch):
        raise ValueError(
            f"composite: expected ops (N, {NCOLS}), stops (M, {NSTOP}) and an image with 3 or 4 "
            f"contiguous bytes per pixel, got {ops.shape[1]}, {stops.shape[1]}, {nch} channels "
            f"with strides {image.strides[1]}, {image.strides[2]}"
        )
    if n == 0 or height == 0 or width == 0:
        return
    for i in range(n):
        kind, first, count = ops[i, 0], ops[i, 1], ops[i, 2]
        if not (
            (kind == KIND_DISC or kind == KIND_RECT or kind == KIND_SEGMENT)
            and first >= 0.0 and count >= 1.0 and first + count <= nstops
            and first == <Py_ssize_t>first and count == <Py_ssize_t>count
        ):
            raise ValueError(f"composite: ops row {i} is invalid: {list(ops[i])}")
        total += <Py_ssize_t>count
    threads = threads if threads > 1 else 1
    try:
        shapes = <Shape *>malloc(n * sizeof(Shape))
        segs = <double *>malloc(2 * total * NSEG * sizeof(double))
        scratch = <double *>malloc(threads * (NSCRATCH * width + 1) * sizeof(double))
        if shapes == NULL or segs == NULL or scratch == NULL:
            raise MemoryError()
        total = 0
        for i in range(n):
            if build_shape(&shapes[used], &ops[i, 0], &stops[0, 0], segs + 2 * total * NSEG,
                           height, width, fast_path):
                used += 1
                total += <Py_ssize_t>ops[i, 2]
        if used == 0:
            return
        with nogil:
            for y in prange(height, num_threads=threads, schedule="dynamic", chunksize=8):
                draw_row(&image[y, 0, 0], y, nch, bgr, shapes, used,
                         scratch + threadid() * (NSCRATCH * width + 1), width)
    finally:
        free(shapes)
        free(segs)
        free(scratch)
