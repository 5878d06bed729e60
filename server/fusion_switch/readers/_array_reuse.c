/*
 * A numpy memory handler (NEP 49) that keeps the blocks of large freed arrays for the next
 * arrays (of about their size as they are, of another size remapped), without raising the peak
 * of the large blocks a process holds.
 *
 * Why: a comparing process reads large dump files into fresh buffers, and the replay builds
 * float64 copies of whole tensors and kernel temporaries of the same sizes, op after op. glibc
 * serves a large block with a fresh mmap and unmaps it when it is freed, so every such array
 * paid for the kernel to fault in and zero its pages again: on a real-sized case, clearing
 * pages was ~14% of a run's CPU (issue 16).
 *
 * The rule that keeps memory bounded: a freed block is kept only while the blocks in use plus
 * the blocks kept stay within the most that were ever in use at once (the high-water mark), and
 * kept blocks are freed before a new block would take the total above it. So the kept blocks
 * only fill the room the process had already needed, and its peak is what it would be without
 * them (a reused block may be up to 1/16 larger than asked for; that slack is counted). Below
 * glibc's largest mmap threshold (32 MiB) glibc may serve such arrays from heap the process
 * holds anyway, which blocks of their own then add to: the comparison asks for 32 MiB.
 *
 * Large blocks are mappings of their own (mmap), with numpy's huge-page advice: taken from
 * glibc's heap instead, blocks freed out of order left holes the heap kept, and the process
 * grew by ~100 MB on a real-sized case. Small arrays, and blocks this handler did not hand out,
 * go to the handler that was current when reuse started (numpy's default). The blocks handed
 * out are recorded by address, so a free is recognised whatever size numpy passes with it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>

#define MAX_KEPT 32

typedef struct {
    void *ptr;
    size_t capacity;
} Block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static PyDataMem_Handler *inner = NULL; /* the one before: small arrays, blocks not ours */
static PyObject *inner_capsule = NULL;  /* keeps it alive */

/* What a block of install() asked for; a handler's ctx. Each threshold has its own handler, so
 * that blocks open at once in different threads (contexts) keep their own threshold. */
typedef struct {
    size_t min_bytes; /* smaller arrays go straight to the inner handler */
    int hugepages;    /* advise huge pages for the blocks, as numpy does */
} Settings;

#define MAX_SETTINGS 8
#define HANDLER_NAME "fusion_switch_array_reuse"
static Settings settings[MAX_SETTINGS];
static PyDataMem_Handler handlers[MAX_SETTINGS];
static PyObject *capsules[MAX_SETTINGS];
static int n_settings = 0;

static Block *live = NULL; /* blocks handed out, sorted by address */
static Py_ssize_t n_live = 0, live_room = 0;
static Block kept[MAX_KEPT]; /* freed blocks kept for reuse, oldest first */
static int n_kept = 0;
static size_t live_bytes = 0, kept_bytes = 0, high_water = 0;
static unsigned long long hits = 0, misses = 0, resizes = 0;
static int active = 0; /* install()s not yet restored: blocks are kept only while one is */

/* ------------------------------------------------------------------ the live registry */

static Py_ssize_t live_position(void *ptr)
{
    Py_ssize_t low = 0, high = n_live;
    while (low < high) {
        Py_ssize_t middle = (low + high) / 2;
        if ((uintptr_t)live[middle].ptr < (uintptr_t)ptr)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

/* 0, or -1 when the registry cannot grow (the block is then freed by the caller) */
static int live_add(void *ptr, size_t capacity)
{
    if (n_live == live_room) {
        Py_ssize_t room = live_room ? live_room * 2 : 64;
        Block *grown = realloc(live, (size_t)room * sizeof(Block));
        if (grown == NULL) return -1;
        live = grown;
        live_room = room;
    }
    Py_ssize_t at = live_position(ptr);
    memmove(&live[at + 1], &live[at], (size_t)(n_live - at) * sizeof(Block));
    live[at].ptr = ptr;
    live[at].capacity = capacity;
    n_live++;
    live_bytes += capacity;
    if (live_bytes + kept_bytes > high_water) high_water = live_bytes + kept_bytes;
    return 0;
}

/* the block's capacity, removed from the registry; 0 when it is not there */
static size_t live_remove(void *ptr)
{
    if (n_live == 0) return 0;
    Py_ssize_t at = live_position(ptr);
    if (at == n_live || live[at].ptr != ptr) return 0;
    size_t capacity = live[at].capacity;
    memmove(&live[at], &live[at + 1], (size_t)(n_live - at - 1) * sizeof(Block));
    n_live--;
    live_bytes -= capacity;
    return capacity;
}

/* ------------------------------------------------------------------ kept blocks */

static Block take_kept(int at)
{
    Block block = kept[at];
    memmove(&kept[at], &kept[at + 1], (size_t)(n_kept - at - 1) * sizeof(Block));
    n_kept--;
    kept_bytes -= block.capacity;
    return block;
}

/* Kept blocks to free (oldest first) so that `more` bytes can be added without passing the
 * high-water mark; written to `out` (at most MAX_KEPT), freed by the caller outside the lock. */
static int evict_for(size_t more, Block *out)
{
    int n = 0;
    while (n_kept > 0 && live_bytes + kept_bytes + more > high_water) out[n++] = take_kept(0);
    return n;
}

static size_t mapped_length(size_t capacity)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (capacity + page - 1) / page * page;
}

/* A block of its own mapping: unmapped, its memory goes back to the system at once, whatever
 * else the heap holds (from glibc's heap, blocks kept out of order left holes it kept). */
static void *map_block(size_t capacity, int hugepages)
{
    size_t length = mapped_length(capacity);
    void *ptr = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    if (hugepages) madvise(ptr, length, MADV_HUGEPAGE); /* as numpy advises its large arrays */
#endif
    return ptr;
}

static void unmap_blocks(Block *blocks, int n)
{
    for (int i = 0; i < n; i++) munmap(blocks[i].ptr, mapped_length(blocks[i].capacity));
}

/* ------------------------------------------------------------------ the handler */

/* A kept block that fits `size` (at most 1/16 larger), taken out of the kept ones and
 * recorded as in use; NULL when none fits. Called with the lock held. */
static void *reuse_kept(size_t size)
{
    int best = -1;
    for (int i = 0; i < n_kept; i++) {
        size_t capacity = kept[i].capacity;
        if (capacity >= size && capacity - size <= size / 16 &&
            (best < 0 || capacity < kept[best].capacity))
            best = i;
    }
    if (best < 0) return NULL;
    Block block = take_kept(best);
    if (live_add(block.ptr, block.capacity) < 0) { /* registry full: leave it kept */
        kept[n_kept++] = block;
        kept_bytes += block.capacity;
        return NULL;
    }
    hits++;
    return block.ptr;
}

#ifdef MREMAP_MAYMOVE
/* whether a block of `a` bytes is a better start than one of `b` for `size`: at least as large
 * beats smaller (shrinking adds no pages), then the smaller of two larger, the larger of two
 * smaller */
static int nearer(size_t a, size_t b, size_t size)
{
    if ((a >= size) != (b >= size)) return a >= size;
    return a >= size ? a < b : a > b;
}
#endif

/*
 * When no kept block fits: the kept block nearest in size (the smallest larger one, else the
 * largest) remapped to `size` with mremap, the other kept blocks freed first as for a new one.
 * Shrunk, it gives its tail back to the system; grown, only the added pages are new (moved, not
 * copied). The pages it keeps were faulted in and zeroed already: the replay's arrays change
 * size op after op, and clearing fresh pages was 11% of a real-sized run's CPU (issue 16).
 * *kept_length: the bytes it brings that may hold old values (a zeroed array must clear them).
 * NULL when nothing is kept or the remapping fails (the block is then freed).
 */
static void *resize_kept(size_t size, const Settings *wanted, size_t *kept_length)
{
#ifdef MREMAP_MAYMOVE
    Block evicted[MAX_KEPT];
    pthread_mutex_lock(&lock);
    int pick = -1;
    for (int i = 0; i < n_kept; i++)
        if (pick < 0 || nearer(kept[i].capacity, kept[pick].capacity, size)) pick = i;
    if (pick < 0) {
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    Block block = take_kept(pick);
    int n_evicted = evict_for(size, evicted);
    resizes++;
    pthread_mutex_unlock(&lock);
    unmap_blocks(evicted, n_evicted);
    size_t old_length = mapped_length(block.capacity), length = mapped_length(size);
    void *ptr = old_length == length ? block.ptr
                                     : mremap(block.ptr, old_length, length, MREMAP_MAYMOVE);
    if (ptr == MAP_FAILED) {
        munmap(block.ptr, old_length);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (wanted->hugepages && length > old_length) madvise(ptr, length, MADV_HUGEPAGE);
#endif
    pthread_mutex_lock(&lock);
    int added = live_add(ptr, size);
    pthread_mutex_unlock(&lock);
    if (added < 0) {
        munmap(ptr, length);
        return NULL;
    }
    *kept_length = old_length < size ? old_length : size; /* whole pages: values past capacity */
    return ptr;
#else
    (void)size;
    (void)wanted;
    (void)kept_length;
    return NULL;
#endif
}

/* A new block (a new mapping: zeroed), kept blocks freed first so that the total stays within
 * the high-water mark where it can. */
static void *fresh(size_t size, const Settings *wanted)
{
    Block evicted[MAX_KEPT];
    pthread_mutex_lock(&lock);
    misses++;
    int n_evicted = evict_for(size, evicted);
    pthread_mutex_unlock(&lock);
    unmap_blocks(evicted, n_evicted);
    void *ptr = map_block(size, wanted->hugepages);
    if (ptr == NULL) return NULL;
    pthread_mutex_lock(&lock);
    int added = live_add(ptr, size);
    pthread_mutex_unlock(&lock);
    if (added < 0) { /* not recorded: it must not be handed out as ours */
        munmap(ptr, mapped_length(size));
        return NULL;
    }
    return ptr;
}

static void *reuse_malloc(void *ctx, size_t size)
{
    const Settings *wanted = ctx;
    if (size < wanted->min_bytes) return inner->allocator.malloc(inner->allocator.ctx, size);
    pthread_mutex_lock(&lock);
    void *ptr = reuse_kept(size);
    pthread_mutex_unlock(&lock);
    size_t kept_length;
    if (ptr == NULL) ptr = resize_kept(size, wanted, &kept_length);
    return ptr != NULL ? ptr : fresh(size, wanted);
}

/* Zeroed arrays are counted and reused too: clearing a kept block costs less than the page
 * faults of a fresh one, and an uncounted large block would let the kept ones raise the peak. */
static void *reuse_calloc(void *ctx, size_t nelem, size_t elsize)
{
    const Settings *wanted = ctx;
    if (elsize != 0 && nelem > SIZE_MAX / elsize) return NULL;
    size_t size = nelem * elsize;
    if (size < wanted->min_bytes)
        return inner->allocator.calloc(inner->allocator.ctx, nelem, elsize);
    pthread_mutex_lock(&lock);
    void *ptr = reuse_kept(size);
    pthread_mutex_unlock(&lock);
    size_t dirty = size; /* the bytes that may hold old values */
    if (ptr == NULL) ptr = resize_kept(size, wanted, &dirty);
    if (ptr == NULL) return fresh(size, wanted);
    memset(ptr, 0, dirty);
    return ptr;
}

static void reuse_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    if (ptr == NULL) return;
    Block evicted[MAX_KEPT];
    int n_evicted = 0;
    pthread_mutex_lock(&lock);
    size_t capacity = live_remove(ptr);
    if (capacity == 0) {
        pthread_mutex_unlock(&lock);
        inner->allocator.free(inner->allocator.ctx, ptr, size);
        return;
    }
    int keep = active > 0 && live_bytes + kept_bytes + capacity <= high_water;
    if (keep && n_kept == MAX_KEPT) evicted[n_evicted++] = take_kept(0);
    if (keep) {
        kept[n_kept].ptr = ptr;
        kept[n_kept].capacity = capacity;
        n_kept++;
        kept_bytes += capacity;
    }
    pthread_mutex_unlock(&lock);
    unmap_blocks(evicted, n_evicted);
    if (!keep) munmap(ptr, mapped_length(capacity));
}

static void *reuse_realloc(void *ctx, void *ptr, size_t new_size)
{
    if (ptr == NULL) return reuse_malloc(ctx, new_size);
    pthread_mutex_lock(&lock);
    Py_ssize_t at = live_position(ptr);
    size_t capacity = (at < n_live && live[at].ptr == ptr) ? live[at].capacity : 0;
    pthread_mutex_unlock(&lock);
    /* not one of ours: the inner handler's block, resized by it (even past the threshold: its
     * old size is not known here to copy it; ndarray.resize of a small array, rarely) */
    if (capacity == 0) return inner->allocator.realloc(inner->allocator.ctx, ptr, new_size);
    if (new_size <= capacity && new_size >= ((const Settings *)ctx)->min_bytes) return ptr;
    void *moved = reuse_malloc(ctx, new_size ? new_size : 1);
    if (moved == NULL) return NULL;
    memcpy(moved, ptr, new_size < capacity ? new_size : capacity);
    reuse_free(ctx, ptr, capacity);
    return moved;
}

/* The capsule of the handler for these settings (a borrowed reference), made on first use;
 * NULL with an exception when MAX_SETTINGS different ones are in use already. */
static PyObject *handler_for(size_t min_bytes, int hugepages)
{
    for (int i = 0; i < n_settings; i++)
        if (settings[i].min_bytes == min_bytes && settings[i].hugepages == hugepages)
            return capsules[i];
    if (n_settings == MAX_SETTINGS) {
        PyErr_SetString(PyExc_ValueError, "too many different thresholds");
        return NULL;
    }
    int i = n_settings;
    settings[i].min_bytes = min_bytes;
    settings[i].hugepages = hugepages;
    PyDataMem_Handler *handler = &handlers[i];
    memset(handler, 0, sizeof *handler);
    strncpy(handler->name, HANDLER_NAME, sizeof handler->name - 1);
    handler->version = 1;
    handler->allocator.ctx = &settings[i];
    handler->allocator.malloc = reuse_malloc;
    handler->allocator.calloc = reuse_calloc;
    handler->allocator.realloc = reuse_realloc;
    handler->allocator.free = reuse_free;
    capsules[i] = PyCapsule_New(handler, "mem_handler", NULL); /* kept for good */
    if (capsules[i] == NULL) return NULL;
    n_settings++;
    return capsules[i];
}

/* ------------------------------------------------------------------ module functions */

/* Every kept block freed, the high-water mark started again from the blocks in use. */
static void release_kept(void)
{
    Block evicted[MAX_KEPT];
    pthread_mutex_lock(&lock);
    int n = 0;
    while (n_kept > 0) evicted[n++] = take_kept(0);
    high_water = live_bytes;
    pthread_mutex_unlock(&lock);
    if (n) unmap_blocks(evicted, n);
}

PyDoc_STRVAR(install_doc,
             "install(min_bytes, hugepages) -> previous handler capsule: numpy arrays made from "
             "now on (in this context) use the reusing handler; arrays of min_bytes or more get "
             "blocks of their own mapping (huge pages advised when hugepages), reused. "
             "Each install() is ended by a restore().");

static PyObject *install(PyObject *self, PyObject *args)
{
    Py_ssize_t minimum;
    int advise;
    if (!PyArg_ParseTuple(args, "np:install", &minimum, &advise)) return NULL;
    if (minimum < 1) {
        PyErr_SetString(PyExc_ValueError, "min_bytes must be positive");
        return NULL;
    }
    PyObject *ours = handler_for((size_t)minimum, advise);
    if (ours == NULL) return NULL;
    if (inner == NULL) { /* the first install: the current handler does the allocating */
        PyObject *current = PyDataMem_GetHandler();
        if (current == NULL) return NULL;
        PyDataMem_Handler *handler = PyCapsule_GetPointer(current, "mem_handler");
        if (handler == NULL) {
            Py_DECREF(current);
            return NULL;
        }
        if (strcmp(handler->name, HANDLER_NAME) == 0) {
            Py_DECREF(current);
            PyErr_SetString(PyExc_RuntimeError, "no inner handler");
            return NULL;
        }
        inner_capsule = current;
        inner = handler;
    }
    PyObject *previous = PyDataMem_SetHandler(ours);
    if (previous == NULL) return NULL;
    pthread_mutex_lock(&lock);
    if (active++ == 0) high_water = live_bytes; /* the mark of this run of blocks only */
    pthread_mutex_unlock(&lock);
    return previous;
}

PyDoc_STRVAR(restore_doc,
             "restore(capsule): make that handler current again (in this context); after the "
             "last open install(), every kept block is freed.");

static PyObject *restore(PyObject *self, PyObject *capsule)
{
    PyObject *previous = PyDataMem_SetHandler(capsule);
    if (previous == NULL) return NULL;
    Py_DECREF(previous);
    pthread_mutex_lock(&lock);
    int last = active > 0 && --active == 0;
    pthread_mutex_unlock(&lock);
    if (last) release_kept();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(stats_doc,
             "stats() -> dict: bytes in use, kept and the high-water mark (of blocks of at least "
             "min_bytes), blocks reused as they were, reused resized, and newly allocated.");

static PyObject *stats(PyObject *self, PyObject *unused)
{
    pthread_mutex_lock(&lock);
    size_t in_use = live_bytes, held = kept_bytes, mark = high_water;
    unsigned long long reused = hits, fresh = misses, resized = resizes;
    Py_ssize_t blocks = n_live;
    int kept_blocks = n_kept;
    pthread_mutex_unlock(&lock);
    return Py_BuildValue("{s:n,s:n,s:n,s:K,s:K,s:K,s:n,s:i}", "live", (Py_ssize_t)in_use,
                         "kept", (Py_ssize_t)held, "high_water", (Py_ssize_t)mark, "reused",
                         reused, "resized", resized, "allocated", fresh, "live_blocks", blocks,
                         "kept_blocks", kept_blocks);
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS, install_doc},
    {"restore", restore, METH_O, restore_doc},
    {"stats", stats, METH_NOARGS, stats_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_array_reuse",
    "Reuse of large numpy array blocks without raising peak memory (see _array_reuse.c).", -1,
    methods,
};

/* A fork while another thread holds the lock would leave the child's copy locked forever. The
 * child lets the kept blocks go: shared with the parent until written, reusing one there would
 * copy its pages instead of clearing them, and hold them twice. */
static void lock_for_fork(void) { pthread_mutex_lock(&lock); }
static void unlock_in_parent(void) { pthread_mutex_unlock(&lock); }
static void unlock_in_child(void)
{
    pthread_mutex_unlock(&lock);
    release_kept(); /* the child is one thread now: nothing can take the lock in between */
}
static int fork_handlers = 0; /* registered once per process, however often the module loads */

PyMODINIT_FUNC PyInit__array_reuse(void)
{
    import_array();
    if (!fork_handlers && pthread_atfork(lock_for_fork, unlock_in_parent, unlock_in_child) == 0)
        fork_handlers = 1;
    if (!fork_handlers) {
        PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
        return NULL;
    }
    return PyModule_Create(&module);
}
