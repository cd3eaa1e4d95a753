/* miofind._native: the hot path's two foreign calls without ctypes' or CuPy's per-call argument handling, and the
 * learned cost model's exit-table scorer.
 *
 * launcher(): a kernel launch with its argument block packed once. A call writes the device pointers of
 * that launch into a copy of the block on the C stack and calls cuLaunchKernel through the function
 * pointer it was given, with the GIL released, as CuPy's launchKernel and ctypes do. Nothing is shared
 * between calls, so concurrent calls from several threads need no lock.
 *
 * caller(): any C function whose arguments are all 64-bit integers or pointers (cublasLtMatmul,
 * cufftExecR2C, ...) with its argument list packed once; a call writes the arguments that change.
 *
 * pdl_launcher(): the address of a function of cuLaunchKernel's signature that launches through cuLaunchKernelEx as
 * the programmatic dependent of the work before it in the stream (given to launcher() as its fn).
 *
 * Both return the callee's status (CUresult, cublasStatus_t, cufftResult) as an int: the Python side
 * raises its own error for it.
 *
 * recipe(): a whole solution in one call: the kernel launches and library calls that ``miofind.launch.trace``
 * read from an invoker, each pointer named as one of the invoker's four (a, b, out, workspace) plus a byte offset.
 * A call adds the offsets, checks the four addresses' alignment (refusing, with nothing launched, where one is off)
 * and runs every step in order with the GIL released once.
 *
 * cudnn_heuristics(): cuDNN's heuristics for one convolution through the backend API (the operation graph built, each
 * mode's engine configs read as engine index and knob choices) with the GIL released once, so that another thread
 * lists a find's cuDNN plans while the find's Python work goes on (through ctypes, each of its ~100 calls would wait
 * for the GIL again); cudnn_plan_build(): one plan of it built so (cudnn_execute.BackendPlan).
 *
 * cudnn_runner(): the address of a library call (a recipe step of kind 1) that runs one cuDNN execution plan through
 * the backend API: its first argument a cudnn_ctx (solvers/cudnn_execute.py fills it), then the three device pointers
 * and the workspace; it sets the context's stream on the device's handle, makes the variant pack, executes the plan
 * and frees the pack, holding the handle's lock throughout, and returns the first failing cudnnStatus_t. One finalized
 * plan serves every stream (a context per stream), so a plan is compiled once however many streams run it.
 *
 * qs_lookup(), qs_score(): miofind.costmodel._Exits (QuickScorer tables) in C: a problem's table rows by bisection of its
 * feature values, and the AND of table rows, the exit leaf of each tree (the highest set bit) and the sums of the leaf
 * values per row, added in numpy's order so that both paths give the same times. The limited API of 3.10 has no buffer
 * protocol: the table and the leaf values come as addresses, their arrays kept alive by the caller.
 *
 * Built against the limited API (abi3) of Python 3.10, so one binary serves every later CPython.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAMS 128
#define MAX_CALL_ARGS 16

typedef uint64_t u64;
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);

/* cuLaunchKernelEx's CUlaunchConfig and CUlaunchAttribute (cuda.h's layout: the attribute's value is a 64-byte union
 * after the 4-byte id and 4 bytes of padding) */
typedef struct {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int i;
    } value;
} cu_launch_attribute;

typedef struct {
    unsigned grid[3], block[3], smem;
    void *stream;
    cu_launch_attribute *attrs;
    unsigned nattrs;
} cu_launch_config;

_Static_assert(sizeof(cu_launch_attribute) == 72, "CUlaunchAttribute is 72 bytes");
_Static_assert(sizeof(void *) != 8 || sizeof(cu_launch_config) == 56, "CUlaunchConfig is 56 bytes on 64-bit hosts");

typedef int (*launch_ex_fn)(const cu_launch_config *, void *, void **, void **);

#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6

static launch_ex_fn g_launch_ex = NULL;

/* cuLaunchKernel's signature, launched as the programmatic dependent of the stream's work before it: the kernel may
 * start once every block of the grid before it has issued griddepcontrol.launch_dependents (or exited). */
static int pdl_launch(void *func, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned smem, void *stream, void **params, void **extra) {
    cu_launch_attribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.i = 1;
    cu_launch_config cfg = {{gx, gy, gz}, {bx, by, bz}, smem, stream, &attr, 1};
    return g_launch_ex(&cfg, func, params, extra);
}

typedef struct {
    launch_fn fn;
    void *func;
    unsigned dims[6];
    unsigned smem;
    int nparams, nslots, nmaps;
    u64 vals[MAX_PARAMS];        /* each parameter's bytes, little-endian in an 8-byte cell */
    int slots[MAX_PARAMS];       /* parameters filled per call with device pointers, in call order */
    int maps[MAX_PARAMS];        /* parameters passed by the host address given per call (tensor maps) */
} launch_t;

typedef struct {
    void *fn;
    int nargs, nslots;
    u64 vals[MAX_CALL_ARGS];
    int slots[MAX_CALL_ARGS];
} call_t;

#define MAX_CELLS 512             /* a kind-2 step's parameter buffer in 8-byte cells: 4 KiB */

typedef struct {
    int kind;                    /* 0 a kernel launch, 1 a library call (func a C function of nparams u64s), 2 a
                                    kernel launch whose parameters are one buffer of nbytes (a library's kernel),
                                    3 a kernel launch as the programmatic dependent of the step before (a plain
                                    one until pdl_launcher has been called) */
    void *func;
    unsigned dims[6];
    unsigned smem;
    int nparams, nslots;         /* parameters (kind 0, 1) or buffer cells (kind 2) */
    size_t nbytes;
    u64 vals[MAX_CELLS];
    int slot_param[MAX_CELLS];
    int slot_role[MAX_CELLS];    /* 0 a, 1 b, 2 out, 3 workspace */
    u64 slot_off[MAX_CELLS];     /* byte offset added to the role's address */
} step_t;

typedef struct {
    launch_fn fn;
    u64 align[4];                /* what each role's address must be a multiple of */
    int nsteps;
    step_t steps[];
} recipe_t;

#define MAX_STEPS 64

static const char LAUNCH_CAPSULE[] = "miofind._native.launch";
static const char CALL_CAPSULE[] = "miofind._native.call";
static const char RECIPE_CAPSULE[] = "miofind._native.recipe";

static void free_capsule_launch(PyObject *cap) { free(PyCapsule_GetPointer(cap, LAUNCH_CAPSULE)); }
static void free_capsule_call(PyObject *cap) { free(PyCapsule_GetPointer(cap, CALL_CAPSULE)); }
static void free_capsule_recipe(PyObject *cap) { free(PyCapsule_GetPointer(cap, RECIPE_CAPSULE)); }

/* The builtin function of ``def`` bound to ``state`` through a capsule that frees it with the function;
 * NULL (``state`` freed) on failure. */
static PyObject *bind_state(void *state, const char *name, PyCapsule_Destructor destructor, PyMethodDef *def) {
    PyObject *cap = PyCapsule_New(state, name, destructor);
    if (!cap) {
        free(state);
        return NULL;
    }
    PyObject *f = PyCFunction_NewEx(def, cap, NULL);
    Py_DECREF(cap);
    return f;
}

/* An int argument as 64 bits (a pointer, a stream handle, a size): TypeError for anything else, OverflowError
 * out of range; a negative int is taken modulo 2^64 (a signed scalar's bit pattern). */
static int as_u64(PyObject *o, u64 *out) {
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected an int (a device pointer, handle or size), got %R", (PyObject *)Py_TYPE(o));
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        long long s = PyLong_AsLongLong(o);
        if (s == -1 && PyErr_Occurred()) return -1;
        v = (unsigned long long)s;
    }
    *out = (u64)v;
    return 0;
}

/* A sequence of ints into out[0..n): its length in *n (at most cap). */
static int int_list(PyObject *seq, u64 *out, int *n, int cap, const char *what) {
    PyObject *fast = PySequence_Tuple(seq);
    if (!fast) return -1;
    Py_ssize_t len = PyTuple_Size(fast);
    if (len > cap) {
        PyErr_Format(PyExc_ValueError, "%s: %zd entries, at most %d", what, len, cap);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        if (as_u64(PyTuple_GetItem(fast, i), &out[i]) < 0) {
            Py_DECREF(fast);
            return -1;
        }
    }
    *n = (int)len;
    Py_DECREF(fast);
    return 0;
}

/* A sequence of at most cap indices below bound into out[0..n). */
static int index_list(PyObject *seq, int *out, int *n, int cap, int bound, const char *what) {
    u64 tmp[MAX_PARAMS];
    if (int_list(seq, tmp, n, cap, what) < 0) return -1;
    for (int i = 0; i < *n; i++) {
        if (tmp[i] >= (u64)bound) {
            PyErr_Format(PyExc_ValueError, "%s: index %llu out of range (%d entries)", what, (unsigned long long)tmp[i], bound);
            return -1;
        }
        out[i] = (int)tmp[i];
    }
    return 0;
}

/* launch(stream, map addresses..., pointers...) -> CUresult */
static PyObject *launch_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    const launch_t *L = (const launch_t *)PyCapsule_GetPointer(self, LAUNCH_CAPSULE);
    if (!L) return NULL;
    if (nargs != 1 + L->nmaps + L->nslots) {
        PyErr_Format(PyExc_TypeError, "launch takes a stream, %d tensor-map address(es) and %d pointer(s): %zd "
                     "argument(s) given", L->nmaps, L->nslots, nargs);
        return NULL;
    }
    u64 stream, vals[MAX_PARAMS];
    void *params[MAX_PARAMS];
    if (as_u64(args[0], &stream) < 0) return NULL;
    const int np = L->nparams;
    memcpy(vals, L->vals, sizeof(u64) * (size_t)np);
    for (int i = 0; i < np; i++) params[i] = &vals[i];
    for (int j = 0; j < L->nmaps; j++) {
        u64 addr;
        if (as_u64(args[1 + j], &addr) < 0) return NULL;
        params[L->maps[j]] = (void *)(uintptr_t)addr;
    }
    PyObject *const *ptrs = args + 1 + L->nmaps;
    for (int j = 0; j < L->nslots; j++) {
        if (as_u64(ptrs[j], &vals[L->slots[j]]) < 0) return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = L->fn(L->func, L->dims[0], L->dims[1], L->dims[2], L->dims[3], L->dims[4], L->dims[5], L->smem,
               (void *)(uintptr_t)stream, params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(rc);
}

static PyMethodDef launch_def = {"launch", (PyCFunction)(void (*)(void))launch_call, METH_FASTCALL,
                                 "launch(stream, *map_addresses, *pointers) -> CUresult"};

/* launcher(fn, func, grid, block, shared_mem, values, slots, maps) -> launch */
static PyObject *make_launcher(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *fn_o, *func_o, *grid, *block, *smem_o, *values, *slots, *maps;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:launcher", &fn_o, &func_o, &grid, &block, &smem_o, &values, &slots, &maps))
        return NULL;
    launch_t *L = (launch_t *)calloc(1, sizeof(launch_t));
    if (!L) return PyErr_NoMemory();
    u64 fn, func, smem, g[3], b[3];
    int ng, nb;
    if (as_u64(fn_o, &fn) < 0 || as_u64(func_o, &func) < 0 || as_u64(smem_o, &smem) < 0 ||
        int_list(grid, g, &ng, 3, "grid") < 0 || int_list(block, b, &nb, 3, "block") < 0 ||
        int_list(values, L->vals, &L->nparams, MAX_PARAMS, "values") < 0 ||
        index_list(slots, L->slots, &L->nslots, MAX_PARAMS, L->nparams, "slots") < 0 ||
        index_list(maps, L->maps, &L->nmaps, MAX_PARAMS, L->nparams, "maps") < 0)
        goto fail;
    if (ng != 3 || nb != 3) {
        PyErr_SetString(PyExc_ValueError, "grid and block take 3 dimensions each");
        goto fail;
    }
    if (!fn || !func) {
        PyErr_SetString(PyExc_ValueError, "launcher: null launch function or kernel");
        goto fail;
    }
    for (int i = 0; i < 3; i++) {
        if (!g[i] || !b[i] || g[i] > 0xffffffffu || b[i] > 0xffffffffu) {
            PyErr_SetString(PyExc_ValueError, "grid and block dimensions must be in 1..2^32-1");
            goto fail;
        }
        L->dims[i] = (unsigned)g[i];
        L->dims[3 + i] = (unsigned)b[i];
    }
    L->fn = (launch_fn)(uintptr_t)fn;
    L->func = (void *)(uintptr_t)func;
    L->smem = (unsigned)smem;
    return bind_state(L, LAUNCH_CAPSULE, free_capsule_launch, &launch_def);
fail:
    free(L);
    return NULL;
}

typedef int (*f1)(u64);
typedef int (*f2)(u64, u64);
typedef int (*f3)(u64, u64, u64);
typedef int (*f4)(u64, u64, u64, u64);
typedef int (*f5)(u64, u64, u64, u64, u64);
typedef int (*f6)(u64, u64, u64, u64, u64, u64);
typedef int (*f7)(u64, u64, u64, u64, u64, u64, u64);
typedef int (*f8)(u64, u64, u64, u64, u64, u64, u64, u64);
typedef int (*f16)(u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64);

/* fn(v[0..nargs)) -> its int status. x86-64 and AArch64 pass integers and pointers of up to 64 bits in one
 * register or one 8-byte stack slot each, so a function of n such arguments is called correctly through a
 * prototype of n u64s; arities 9-15 go through the 16-argument prototype (the callee ignores the extra trailing
 * arguments). Called without the GIL. */
static int call_arity(void *fn, int nargs, const u64 *v) {
    switch (nargs) {
    case 1: return ((f1)fn)(v[0]);
    case 2: return ((f2)fn)(v[0], v[1]);
    case 3: return ((f3)fn)(v[0], v[1], v[2]);
    case 4: return ((f4)fn)(v[0], v[1], v[2], v[3]);
    case 5: return ((f5)fn)(v[0], v[1], v[2], v[3], v[4]);
    case 6: return ((f6)fn)(v[0], v[1], v[2], v[3], v[4], v[5]);
    case 7: return ((f7)fn)(v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
    case 8: return ((f8)fn)(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    default:
        return ((f16)fn)(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13],
                         v[14], v[15]);
    }
}

/* call(changing arguments...) -> the function's int status */
static PyObject *call_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    const call_t *C = (const call_t *)PyCapsule_GetPointer(self, CALL_CAPSULE);
    if (!C) return NULL;
    if (nargs != C->nslots) {
        PyErr_Format(PyExc_TypeError, "call takes %d argument(s): %zd given", C->nslots, nargs);
        return NULL;
    }
    u64 v[MAX_CALL_ARGS];
    memcpy(v, C->vals, sizeof v);
    for (int j = 0; j < C->nslots; j++) {
        if (as_u64(args[j], &v[C->slots[j]]) < 0) return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = call_arity(C->fn, C->nargs, v);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(rc);
}

static PyMethodDef call_def = {"call", (PyCFunction)(void (*)(void))call_call, METH_FASTCALL,
                               "call(*changing_arguments) -> status"};

/* caller(fn, values, slots) -> call */
static PyObject *make_caller(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *fn_o, *values, *slots;
    if (!PyArg_ParseTuple(args, "OOO:caller", &fn_o, &values, &slots)) return NULL;
    call_t *C = (call_t *)calloc(1, sizeof(call_t));
    if (!C) return PyErr_NoMemory();
    u64 fn;
    if (as_u64(fn_o, &fn) < 0 || int_list(values, C->vals, &C->nargs, MAX_CALL_ARGS, "values") < 0 ||
        index_list(slots, C->slots, &C->nslots, MAX_CALL_ARGS, C->nargs, "slots") < 0)
        goto fail;
    if (!fn || C->nargs < 1) {
        PyErr_SetString(PyExc_ValueError, "caller: a null function, or no arguments");
        goto fail;
    }
    C->fn = (void *)(uintptr_t)fn;
    return bind_state(C, CALL_CAPSULE, free_capsule_call, &call_def);
fail:
    free(C);
    return NULL;
}

/* run(stream, a, b, out, workspace) -> 0 when every step ran; -1 when an address is not a multiple of its role's
 * alignment (nothing launched: the caller runs the invoker instead); else (step index, status) of the first
 * step that failed (the steps before it ran). */
static PyObject *recipe_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    const recipe_t *R = (const recipe_t *)PyCapsule_GetPointer(self, RECIPE_CAPSULE);
    if (!R) return NULL;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "run takes a stream and 4 addresses (a, b, out, workspace): %zd given", nargs);
        return NULL;
    }
    u64 stream, role[4];
    if (as_u64(args[0], &stream) < 0) return NULL;
    for (int r = 0; r < 4; r++) {
        if (as_u64(args[1 + r], &role[r]) < 0) return NULL;
        if (role[r] % R->align[r]) return PyLong_FromLong(-1);
    }
    int rc = 0, failed = -1;
    Py_BEGIN_ALLOW_THREADS
    u64 vals[MAX_CELLS] __attribute__((aligned(64)));
    void *params[MAX_PARAMS];
    for (int i = 0; i < R->nsteps && !rc; i++) {
        const step_t *S = &R->steps[i];
        memcpy(vals, S->vals, sizeof(u64) * (size_t)S->nparams);
        for (int j = 0; j < S->nslots; j++) vals[S->slot_param[j]] = role[S->slot_role[j]] + S->slot_off[j];
        if (S->kind == 1) {
            for (int j = S->nparams; j < MAX_CALL_ARGS; j++) vals[j] = 0;
            rc = call_arity(S->func, S->nparams, vals);
        } else if (S->kind == 2) {
            size_t nb = S->nbytes;
            /* CU_LAUNCH_PARAM_BUFFER_POINTER, the buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, its size, CU_LAUNCH_PARAM_END */
            void *extra[5] = {(void *)1, vals, (void *)2, &nb, (void *)0};
            rc = R->fn(S->func, S->dims[0], S->dims[1], S->dims[2], S->dims[3], S->dims[4], S->dims[5], S->smem,
                       (void *)(uintptr_t)stream, NULL, extra);
        } else {
            for (int j = 0; j < S->nparams; j++) params[j] = &vals[j];
            launch_fn fn = S->kind == 3 && g_launch_ex ? pdl_launch : R->fn;
            rc = fn(S->func, S->dims[0], S->dims[1], S->dims[2], S->dims[3], S->dims[4], S->dims[5], S->smem,
                    (void *)(uintptr_t)stream, params, NULL);
        }
        if (rc) failed = i;
    }
    Py_END_ALLOW_THREADS
    if (!rc) return PyLong_FromLong(0);
    return Py_BuildValue("(ii)", failed, rc);
}

static PyMethodDef recipe_def = {"run", (PyCFunction)(void (*)(void))recipe_call, METH_FASTCALL,
                                 "run(stream, a, b, out, workspace) -> 0 | -1 (misaligned, nothing run) | "
                                 "(step, status)"};

/* One step (kind, func, grid, block, shared_mem, values, slots[, nbytes]) into S; slots: (parameter, role,
 * offset)s; nbytes: a kind-2 step's buffer size (its values are the buffer's 8-byte cells). */
static int parse_step(PyObject *t, step_t *S, int i) {
    PyObject *kind_o, *func_o, *grid, *block, *smem_o, *values, *slots;
    Py_ssize_t tn = PyTuple_Check(t) ? PyTuple_Size(t) : -1;
    if (tn != 7 && tn != 8) {
        PyErr_Format(PyExc_TypeError, "recipe step %d: expected (kind, func, grid, block, shared_mem, values, slots"
                     "[, nbytes])", i);
        return -1;
    }
    kind_o = PyTuple_GetItem(t, 0); func_o = PyTuple_GetItem(t, 1); grid = PyTuple_GetItem(t, 2);
    block = PyTuple_GetItem(t, 3); smem_o = PyTuple_GetItem(t, 4); values = PyTuple_GetItem(t, 5);
    slots = PyTuple_GetItem(t, 6);
    u64 kind, func, smem, g[3], b[3];
    int ng, nb;
    if (as_u64(kind_o, &kind) < 0 || as_u64(func_o, &func) < 0 || as_u64(smem_o, &smem) < 0 ||
        int_list(grid, g, &ng, 3, "grid") < 0 || int_list(block, b, &nb, 3, "block") < 0)
        return -1;
    if (kind > 3 || !func) {
        PyErr_Format(PyExc_ValueError, "recipe step %d: kind must be 0 (launch), 1 (call), 2 (buffer launch) or 3 "
                     "(a launch as the programmatic dependent of the one before), func non-null", i);
        return -1;
    }
    S->kind = (int)kind;
    S->func = (void *)(uintptr_t)func;
    S->smem = (unsigned)smem;
    int cap = kind == 1 ? MAX_CALL_ARGS : kind == 2 ? MAX_CELLS : MAX_PARAMS;
    if (int_list(values, S->vals, &S->nparams, cap, "values") < 0) return -1;
    if (kind == 2) {
        u64 nbytes = 0;
        if (tn != 8 || as_u64(PyTuple_GetItem(t, 7), &nbytes) < 0) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "recipe step %d: a buffer launch takes nbytes", i);
            return -1;
        }
        if (nbytes > 8 * (u64)S->nparams || nbytes + 8 <= 8 * (u64)S->nparams) {
            PyErr_Format(PyExc_ValueError, "recipe step %d: %llu bytes in %d cells", i, (unsigned long long)nbytes,
                         S->nparams);
            return -1;
        }
        S->nbytes = (size_t)nbytes;
    }
    if (kind == 1 && S->nparams < 1) {
        PyErr_Format(PyExc_ValueError, "recipe step %d: a call takes at least one argument", i);
        return -1;
    }
    if (kind != 1) {
        if (ng != 3 || nb != 3) {
            PyErr_SetString(PyExc_ValueError, "grid and block take 3 dimensions each");
            return -1;
        }
        for (int k = 0; k < 3; k++) {
            if (!g[k] || !b[k] || g[k] > 0xffffffffu || b[k] > 0xffffffffu) {
                PyErr_SetString(PyExc_ValueError, "grid and block dimensions must be in 1..2^32-1");
                return -1;
            }
            S->dims[k] = (unsigned)g[k];
            S->dims[3 + k] = (unsigned)b[k];
        }
    }
    PyObject *fast = PySequence_Tuple(slots);
    if (!fast) return -1;
    Py_ssize_t n = PyTuple_Size(fast);
    if (n > S->nparams) {
        PyErr_Format(PyExc_ValueError, "recipe step %d: %zd slots for %d parameters", i, n, S->nparams);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        u64 trip[3];
        int k3;
        if (int_list(PyTuple_GetItem(fast, j), trip, &k3, 3, "slot") < 0) { Py_DECREF(fast); return -1; }
        if (k3 != 3 || trip[0] >= (u64)S->nparams || trip[1] > 3) {
            PyErr_Format(PyExc_ValueError, "recipe step %d: a slot is (parameter < %d, role 0-3, offset)", i,
                         S->nparams);
            Py_DECREF(fast);
            return -1;
        }
        S->slot_param[j] = (int)trip[0];
        S->slot_role[j] = (int)trip[1];
        S->slot_off[j] = trip[2];
    }
    S->nslots = (int)n;
    Py_DECREF(fast);
    return 0;
}

/* recipe(fn, steps, align) -> run */
static PyObject *make_recipe(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *fn_o, *steps, *align_o;
    if (!PyArg_ParseTuple(args, "OOO:recipe", &fn_o, &steps, &align_o)) return NULL;
    u64 fn, align[4];
    int na;
    if (as_u64(fn_o, &fn) < 0 || int_list(align_o, align, &na, 4, "align") < 0) return NULL;
    if (!fn || na != 4) {
        PyErr_SetString(PyExc_ValueError, "recipe: a null launch function, or align not 4 entries");
        return NULL;
    }
    PyObject *fast = PySequence_Tuple(steps);
    if (!fast) return NULL;
    Py_ssize_t n = PyTuple_Size(fast);
    if (n < 1 || n > MAX_STEPS) {
        PyErr_Format(PyExc_ValueError, "recipe: %zd steps, expected 1 to %d", n, MAX_STEPS);
        Py_DECREF(fast);
        return NULL;
    }
    recipe_t *R = (recipe_t *)calloc(1, sizeof(recipe_t) + sizeof(step_t) * (size_t)n);
    if (!R) { Py_DECREF(fast); return PyErr_NoMemory(); }
    R->fn = (launch_fn)(uintptr_t)fn;
    R->nsteps = (int)n;
    for (int r = 0; r < 4; r++) {
        if (!align[r]) {
            PyErr_SetString(PyExc_ValueError, "recipe: an alignment of 0");
            goto fail;
        }
        R->align[r] = align[r];
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (parse_step(PyTuple_GetItem(fast, i), &R->steps[i], (int)i) < 0) goto fail;
    Py_DECREF(fast);
    return bind_state(R, RECIPE_CAPSULE, free_capsule_recipe, &recipe_def);
fail:
    Py_DECREF(fast);
    free(R);
    return NULL;
}

/* cudnnBackend* entry points by address (cudnn_graph.h's signatures) and one plan's context */
typedef int (*cudnn_create_fn)(int, void **);
typedef int (*cudnn_set_fn)(void *, int, int, int64_t, const void *);
typedef int (*cudnn_one_fn)(void *);
typedef int (*cudnn_exec_fn)(void *, void *, void *);
typedef int (*cudnn_stream_fn)(void *, void *);

typedef struct {
    u64 create, set, finalize, execute, destroy;   /* cudnnBackendCreateDescriptor, SetAttribute, Finalize, Execute,
                                                      DestroyDescriptor */
    u64 set_stream;                                /* cudnnSetStream */
    u64 handle, plan, stream;                      /* the device's cudnnHandle_t, the finalized plan (one per plan,
                                                      shared by its contexts), this context's stream */
    u64 lock;                                      /* an int shared by the plans of one handle: 0 free, 1 held */
    int64_t uids[3];                               /* the variant pack's unique ids of a, b, out */
} cudnn_ctx;

enum { CUDNN_VARIANT_PACK = 16, CUDNN_TYPE_INT64 = 3, CUDNN_TYPE_VOID_PTR = 6, CUDNN_ATTR_VP_UIDS = 1000,
       CUDNN_ATTR_VP_POINTERS = 1001, CUDNN_ATTR_VP_WORKSPACE = 1003 };

static int cudnn_run(u64 ctx, u64 a, u64 b, u64 out, u64 ws) {
    const cudnn_ctx *c = (const cudnn_ctx *)(uintptr_t)ctx;
    int *lock = (int *)(uintptr_t)c->lock;
    void *vp = NULL, *ptrs[3] = {(void *)(uintptr_t)a, (void *)(uintptr_t)b, (void *)(uintptr_t)out};
    void *work = (void *)(uintptr_t)ws;
    /* a cuDNN handle serves one thread at a time */
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {}
    /* the handle serves every stream of its device: this context's stream set under the lock */
    int st = ((cudnn_stream_fn)(uintptr_t)c->set_stream)((void *)(uintptr_t)c->handle, (void *)(uintptr_t)c->stream);
    if (!st && !(st = ((cudnn_create_fn)(uintptr_t)c->create)(CUDNN_VARIANT_PACK, &vp))) {
        cudnn_set_fn set = (cudnn_set_fn)(uintptr_t)c->set;
        if (!(st = set(vp, CUDNN_ATTR_VP_UIDS, CUDNN_TYPE_INT64, 3, c->uids)) &&
            !(st = set(vp, CUDNN_ATTR_VP_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs)) &&
            !(st = set(vp, CUDNN_ATTR_VP_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &work)) &&
            !(st = ((cudnn_one_fn)(uintptr_t)c->finalize)(vp)))
            st = ((cudnn_exec_fn)(uintptr_t)c->execute)((void *)(uintptr_t)c->handle, (void *)(uintptr_t)c->plan, vp);
        ((cudnn_one_fn)(uintptr_t)c->destroy)(vp);
    }
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
    return st;
}

/* cudnn_runner() -> (the address of cudnn_run, sizeof(cudnn_ctx)) */
static PyObject *cudnn_runner(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    return Py_BuildValue("(Kn)", (unsigned long long)(uintptr_t)&cudnn_run, (Py_ssize_t)sizeof(cudnn_ctx));
}

/* -- cuDNN's heuristics through the backend API, with the GIL released once ----------------------------------- */

typedef int (*cudnn_get_fn)(void *, int, int, int64_t, int64_t *, void *);

enum { BK_TENSOR = 17, BK_CONVOLUTION = 1, BK_ENGINE = 2, BK_ENGINECFG = 3, BK_KNOB_CHOICE = 7, BK_OPGRAPH = 15,
       BK_PLAN = 5, BK_ENGINEHEUR = 4, BT_HANDLE = 0, BT_DATA_TYPE = 1, BT_INT64 = 3, BT_FLOAT = 4, BT_CONV_MODE = 7,
       BT_HEUR_MODE = 8, BT_KNOB_TYPE = 9, BT_NUMERICAL_NOTE = 11, BT_BEHAVIOR_NOTE = 19, BT_DESC = 15,
       HEUR_KNOBS = 64, HEUR_NOTES = 32, HEUR_CONFIGS = 256, HEUR_DESCS = 1024, HEUR_MODES_MAX = 4, HEUR_DIMS = 8,
       HEUR_ROW = 4 + 2 * HEUR_KNOBS + 2 * HEUR_NOTES };

typedef struct {
    cudnn_create_fn create;
    cudnn_one_fn destroy, finalize;
    cudnn_set_fn set;
    cudnn_get_fn get;
    void *descs[HEUR_DESCS];
    int n;
} heur_pool;

static int heur_new(heur_pool *p, int kind, void **out) {
    if (p->n >= HEUR_DESCS) return -2;
    int st = p->create(kind, out);
    if (!st) p->descs[p->n++] = *out;
    return st;
}

typedef struct {
    void *handle;
    int dtype, ndim, nsp, op_kind, nmodes, modes[HEUR_MODES_MAX];
    int64_t dims[3][HEUR_DIMS], strides[3][HEUR_DIMS], align;
    int64_t dil[HEUR_DIMS], str[HEUR_DIMS], pre[HEUR_DIMS], post[HEUR_DIMS];
    int op_attrs[6];          /* a, b, out, alpha, beta, the conv descriptor */
} heur_spec;

/* The finalized operation graph of one convolution (tensors uid 1-3, the convolution, the operation) into *graph;
 * returns 0, or the failing step (counted from *step on, *status its cudnnStatus_t). */
static int heur_graph(heur_pool *p, const heur_spec *s, void **graph, int *step_io, int *status) {
    void *t[3], *conv, *op;
    float one = 1.0f, zero = 0.0f;
    int cmp = 0, mode = 1, st, step = *step_io;
    int64_t uid;
#define TRY(e) do { step++; if ((st = (e)) != 0) { *status = st; *step_io = step; return step; } } while (0)
    for (int r = 0; r < 3; r++) {
        uid = r + 1;
        TRY(heur_new(p, BK_TENSOR, &t[r]));
        TRY(p->set(t[r], 901, BT_DATA_TYPE, 1, &s->dtype));
        TRY(p->set(t[r], 902, BT_INT64, s->ndim, s->dims[r]));
        TRY(p->set(t[r], 903, BT_INT64, s->ndim, s->strides[r]));
        TRY(p->set(t[r], 906, BT_INT64, 1, &uid));
        TRY(p->set(t[r], 900, BT_INT64, 1, &s->align));
        TRY(p->finalize(t[r]));
    }
    int64_t nsp = s->nsp;
    TRY(heur_new(p, BK_CONVOLUTION, &conv));
    TRY(p->set(conv, 100, BT_DATA_TYPE, 1, &cmp));               /* FP32 compute */
    TRY(p->set(conv, 101, BT_CONV_MODE, 1, &mode));              /* cross-correlation */
    TRY(p->set(conv, 106, BT_INT64, 1, &nsp));
    TRY(p->set(conv, 102, BT_INT64, s->nsp, s->dil));
    TRY(p->set(conv, 103, BT_INT64, s->nsp, s->str));
    TRY(p->set(conv, 105, BT_INT64, s->nsp, s->pre));
    TRY(p->set(conv, 104, BT_INT64, s->nsp, s->post));
    TRY(p->finalize(conv));
    TRY(heur_new(p, s->op_kind, &op));
    for (int r = 0; r < 3; r++) TRY(p->set(op, s->op_attrs[r], BT_DESC, 1, &t[r]));
    TRY(p->set(op, s->op_attrs[5], BT_DESC, 1, &conv));
    TRY(p->set(op, s->op_attrs[3], BT_FLOAT, 1, &one));
    TRY(p->set(op, s->op_attrs[4], BT_FLOAT, 1, &zero));
    TRY(p->finalize(op));
    TRY(heur_new(p, BK_OPGRAPH, graph));
    TRY(p->set(*graph, 800, BT_HANDLE, 1, &s->handle));
    TRY(p->set(*graph, 801, BT_DESC, 1, &op));
    TRY(p->finalize(*graph));
#undef TRY
    *step_io = step;
    return 0;
}

/* Build the operation graph of one convolution and ask each heuristics mode for its engine configs: ``out`` gets, per
 * config, the engine's global index, the counts of knobs, numerical and behaviour notes (-1: not given), the knobs'
 * (type, value) pairs as the frontend's get_engine_tag reads them, then the notes. Returns 0, or the failing step
 * (1-based, *status its cudnnStatus_t); a mode that fails is passed over (its status in *mode_status). Runs without
 * the GIL: nothing here touches Python. */
static int heur_list(heur_pool *p, const heur_spec *s, int64_t *out, int64_t cap, int64_t *used, int *status,
                     int *mode_status) {
    void *graph, *eng, *knobs[HEUR_KNOBS];
    int st, step = 0;
    *used = 0;
    if (heur_graph(p, s, &graph, &step, status)) return step;
#define TRY(e) do { step++; if ((st = (e)) != 0) { *status = st; return step; } } while (0)
    TRY(heur_new(p, BK_ENGINE, &eng));
    for (int k = 0; k < HEUR_KNOBS; k++) TRY(heur_new(p, BK_KNOB_CHOICE, &knobs[k]));
    for (int m = 0; m < s->nmodes; m++) {
        void *heur, *cfgs[HEUR_CONFIGS];
        int64_t count = 0, got = 0;
        mode_status[m] = 0;
        step++;
        if ((st = heur_new(p, BK_ENGINEHEUR, &heur)) || (st = p->set(heur, 201, BT_DESC, 1, &graph)) ||
            (st = p->set(heur, 200, BT_HEUR_MODE, 1, &s->modes[m])) || (st = p->finalize(heur)) ||
            (st = p->get(heur, 202, BT_DESC, 0, &count, NULL))) {
            mode_status[m] = st;
            continue;
        }
        if (count > HEUR_CONFIGS) count = HEUR_CONFIGS;
        for (int64_t c = 0; c < count; c++) TRY(heur_new(p, BK_ENGINECFG, &cfgs[c]));
        if (count && (st = p->get(heur, 202, BT_DESC, count, &got, cfgs))) {
            mode_status[m] = st;
            continue;
        }
        for (int64_t c = 0; c < got; c++) {
            int64_t n = 0, index = 0, nk = 0;
            if (*used + HEUR_ROW > cap) { *status = -3; return step; }
            int notes[HEUR_NOTES], behaviour[HEUR_NOTES];
            int64_t nn = 0, nb = 0;
            TRY(p->get(cfgs[c], 300, BT_DESC, 1, &n, &eng));
            TRY(p->get(eng, 1301, BT_INT64, 1, &n, &index));
            TRY(p->get(cfgs[c], 302, BT_DESC, HEUR_KNOBS, &nk, knobs));
            /* the engine's numerical and behaviour notes (-1 count: cuDNN would not give them) */
            if (p->get(eng, 1303, BT_NUMERICAL_NOTE, HEUR_NOTES, &nn, notes)) nn = -1;
            if (p->get(eng, 1305, BT_BEHAVIOR_NOTE, HEUR_NOTES, &nb, behaviour)) nb = -1;
            int64_t *row = out + *used;
            row[0] = index;
            row[1] = nk;
            row[2] = nn;
            row[3] = nb;
            for (int64_t k = 0; k < nk; k++) {
                int kind = 0;
                int64_t value = 0;
                TRY(p->get(knobs[k], 600, BT_KNOB_TYPE, 1, &n, &kind));
                TRY(p->get(knobs[k], 601, BT_INT64, 1, &n, &value));
                row[4 + 2 * k] = kind;
                row[5 + 2 * k] = value;
            }
            int64_t *tail = row + 4 + 2 * nk;
            for (int64_t i = 0; i < nn; i++) *tail++ = notes[i];
            for (int64_t i = 0; i < nb; i++) *tail++ = behaviour[i];
            *used = tail - out;
        }
    }
#undef TRY
    return 0;
}

static int tuple_i64(PyObject *o, int64_t *out, int cap, int *n, const char *what) {
    u64 v[HEUR_DIMS];
    int m = 0;
    if (int_list(o, v, &m, cap, what) < 0) return -1;
    for (int i = 0; i < m; i++) out[i] = (int64_t)v[i];
    *n = m;
    return 0;
}

/* The operation-graph arguments shared by cudnn_heuristics and cudnn_plan_build into *s, the five backend entry points
 * into f; -1 with a Python error set on bad arguments. */
static int parse_graph_args(PyObject *fns, unsigned long long handle, int dtype, int op_kind, PyObject *op_attrs,
                            PyObject *dims, PyObject *strides, PyObject *conv, unsigned long long align, heur_spec *s,
                            u64 f[5]) {
    int n;
    memset(s, 0, sizeof(*s));
    s->handle = (void *)(uintptr_t)handle;
    s->dtype = dtype;
    s->op_kind = op_kind;
    s->align = (int64_t)align;
    if (int_list(fns, f, &n, 5, "fns") < 0) return -1;
    if (n != 5) {
        PyErr_SetString(PyExc_ValueError, "cudnn backend: fns must be 5 addresses");
        return -1;
    }
    int64_t attrs[6];
    if (tuple_i64(op_attrs, attrs, 6, &n, "op_attrs") < 0) return -1;
    if (n != 6) {
        PyErr_SetString(PyExc_ValueError, "cudnn backend: op_attrs must be 6 attribute numbers");
        return -1;
    }
    for (int i = 0; i < 6; i++) s->op_attrs[i] = (int)attrs[i];
    for (int r = 0; r < 3; r++) {
        PyObject *d = PySequence_GetItem(dims, r), *st = PySequence_GetItem(strides, r);
        int nd = 0, ns = 0, bad = !d || !st || tuple_i64(d, s->dims[r], HEUR_DIMS, &nd, "dims") < 0 ||
                                 tuple_i64(st, s->strides[r], HEUR_DIMS, &ns, "strides") < 0;
        Py_XDECREF(d);
        Py_XDECREF(st);
        if (bad) return -1;
        if (nd != ns || (r && nd != s->ndim)) {
            PyErr_SetString(PyExc_ValueError, "cudnn backend: dims and strides of the three tensors disagree");
            return -1;
        }
        s->ndim = nd;
    }
    int64_t *convs[4] = {s->dil, s->str, s->pre, s->post};
    for (int q = 0; q < 4; q++) {
        PyObject *c = PySequence_GetItem(conv, q);
        int m = 0, bad = !c || tuple_i64(c, convs[q], HEUR_DIMS, &m, "conv") < 0;
        Py_XDECREF(c);
        if (bad) return -1;
        if (q && m != s->nsp) {
            PyErr_SetString(PyExc_ValueError, "cudnn backend: dilations, strides and paddings disagree");
            return -1;
        }
        s->nsp = m;
    }
    return 0;
}

static heur_pool *new_pool(const u64 f[5]) {
    heur_pool *p = calloc(1, sizeof(heur_pool));
    if (!p) return NULL;
    p->create = (cudnn_create_fn)(uintptr_t)f[0];
    p->destroy = (cudnn_one_fn)(uintptr_t)f[1];
    p->set = (cudnn_set_fn)(uintptr_t)f[2];
    p->get = (cudnn_get_fn)(uintptr_t)f[3];
    p->finalize = (cudnn_one_fn)(uintptr_t)f[4];
    return p;
}

/* cudnn_heuristics(fns, handle, dtype, op_kind, op_attrs, dims, strides, nsp_params, modes, align) -> ([(engine,
 * ((knob, value), ...), numerical notes, behaviour notes), ...], [status per mode]) */
static PyObject *cudnn_heuristics(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *fns, *op_attrs, *dims, *strides, *conv, *modes;
    unsigned long long handle, align;
    int dtype, op_kind;
    if (!PyArg_ParseTuple(args, "OKiiOOOOOK", &fns, &handle, &dtype, &op_kind, &op_attrs, &dims, &strides, &conv,
                          &modes, &align))
        return NULL;
    heur_spec s;
    u64 f[5];
    if (parse_graph_args(fns, handle, dtype, op_kind, op_attrs, dims, strides, conv, align, &s, f) < 0) return NULL;
    int64_t mv[HEUR_MODES_MAX];
    if (tuple_i64(modes, mv, HEUR_MODES_MAX, &s.nmodes, "modes") < 0) return NULL;
    for (int m = 0; m < s.nmodes; m++) s.modes[m] = (int)mv[m];
    heur_pool *p = new_pool(f);
    int64_t cap = (int64_t)HEUR_MODES_MAX * HEUR_CONFIGS * HEUR_ROW, used = 0;
    int64_t *out = malloc(sizeof(int64_t) * cap);
    if (!p || !out) {
        free(p);
        free(out);
        return PyErr_NoMemory();
    }
    int status = 0, mode_status[HEUR_MODES_MAX] = {0}, step;
    Py_BEGIN_ALLOW_THREADS
    step = heur_list(p, &s, out, cap, &used, &status, mode_status);
    for (int i = p->n - 1; i >= 0; i--) p->destroy(p->descs[i]);
    Py_END_ALLOW_THREADS
    free(p);
    PyObject *res = NULL, *configs = NULL, *sts = NULL;
    if (step) {
        PyErr_Format(PyExc_RuntimeError, "cudnn_heuristics: step %d failed with cudnnStatus %d", step, status);
        goto done;
    }
    if (!(configs = PyList_New(0)) || !(sts = PyList_New(0))) goto done;
    for (int64_t i = 0; i < used;) {
        int64_t nk = out[i + 1], nn = out[i + 2], nb = out[i + 3];
        PyObject *ks = PyTuple_New((Py_ssize_t)nk),
                 *ns = nn < 0 ? (Py_INCREF(Py_None), Py_None) : PyTuple_New((Py_ssize_t)nn),
                 *bs = nb < 0 ? (Py_INCREF(Py_None), Py_None) : PyTuple_New((Py_ssize_t)nb);
        if (!ks || !ns || !bs) {
            Py_XDECREF(ks);
            Py_XDECREF(ns);
            Py_XDECREF(bs);
            goto done;
        }
        int bad = 0;
        for (int64_t k = 0; k < nk && !bad; k++) {
            PyObject *pair = Py_BuildValue("(LL)", (long long)out[i + 4 + 2 * k], (long long)out[i + 5 + 2 * k]);
            if (!pair) bad = 1;
            else PyTuple_SetItem(ks, (Py_ssize_t)k, pair);
        }
        const int64_t *tail = out + i + 4 + 2 * nk;
        for (int64_t k = 0; k < nn && !bad; k++) {
            PyObject *v = PyLong_FromLongLong((long long)*tail++);
            if (!v) bad = 1;
            else PyTuple_SetItem(ns, (Py_ssize_t)k, v);
        }
        for (int64_t k = 0; k < nb && !bad; k++) {
            PyObject *v = PyLong_FromLongLong((long long)*tail++);
            if (!v) bad = 1;
            else PyTuple_SetItem(bs, (Py_ssize_t)k, v);
        }
        PyObject *row = bad ? NULL : Py_BuildValue("(LNNN)", (long long)out[i], ks, ns, bs);
        if (!row) {
            if (!bad) goto done;        /* Py_BuildValue's N stole the three on failure too */
            Py_DECREF(ks);
            Py_DECREF(ns);
            Py_DECREF(bs);
            goto done;
        }
        if (PyList_Append(configs, row) < 0) {
            Py_DECREF(row);
            goto done;
        }
        Py_DECREF(row);
        i = tail - out;
    }
    for (int m = 0; m < s.nmodes; m++) {
        PyObject *v = PyLong_FromLong(mode_status[m]);
        if (!v || PyList_Append(sts, v) < 0) {
            Py_XDECREF(v);
            goto done;
        }
        Py_DECREF(v);
    }
    res = Py_BuildValue("(OO)", configs, sts);
done:
    Py_XDECREF(configs);
    Py_XDECREF(sts);
    free(out);
    return res;
}

/* One execution plan (engine, knob choices) of the convolution built on the backend API: 0 with *outcome 0 (built:
 * *plan, *ws), 1 (the engine carries a numerical note of ``exclude``: nothing compiled) or 2 (``defer_rtc`` and the
 * engine compiles when built: nothing compiled); else the failing step (*status its cudnnStatus_t). Runs without the
 * GIL. */
static int plan_build(heur_pool *p, const heur_spec *s, int64_t engine, const int64_t *knobs, int nk,
                      const int *exclude, int nex, int defer_rtc, void **plan, int64_t *ws, int *notes, int64_t *nn,
                      int *beh, int64_t *nb, int *outcome, int *status) {
    void *graph, *eng, *cfg, *kc[HEUR_KNOBS];
    int st, step = 0;
    int64_t n = 0;
    *outcome = -1;
    *nn = *nb = 0;
    if (heur_graph(p, s, &graph, &step, status)) return step;
#define TRY(e) do { step++; if ((st = (e)) != 0) { *status = st; return step; } } while (0)
    TRY(heur_new(p, BK_ENGINE, &eng));
    TRY(p->set(eng, 1300, BT_DESC, 1, &graph));
    TRY(p->set(eng, 1301, BT_INT64, 1, &engine));
    TRY(p->finalize(eng));
    if (nex) {
        /* the frontend's deselect_numeric_notes, asked of the engine before the plan compiles anything */
        TRY(p->get(eng, 1303, BT_NUMERICAL_NOTE, HEUR_NOTES, nn, notes));
        for (int64_t i = 0; i < *nn; i++)
            for (int j = 0; j < nex; j++)
                if (notes[i] == exclude[j]) {
                    *outcome = 1;
                    return 0;
                }
    }
    if (p->get(eng, 1305, BT_BEHAVIOR_NOTE, HEUR_NOTES, nb, beh)) *nb = 0;
    if (defer_rtc)
        for (int64_t i = 0; i < *nb; i++)
            if (beh[i] == 0) {           /* CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION */
                *outcome = 2;
                return 0;
            }
    for (int k = 0; k < nk; k++) {
        int type = (int)knobs[2 * k];
        TRY(heur_new(p, BK_KNOB_CHOICE, &kc[k]));
        TRY(p->set(kc[k], 600, BT_KNOB_TYPE, 1, &type));
        TRY(p->set(kc[k], 601, BT_INT64, 1, &knobs[2 * k + 1]));
        TRY(p->finalize(kc[k]));
    }
    TRY(heur_new(p, BK_ENGINECFG, &cfg));
    TRY(p->set(cfg, 300, BT_DESC, 1, &eng));
    if (nk) TRY(p->set(cfg, 302, BT_DESC, nk, kc));
    TRY(p->finalize(cfg));
    TRY(heur_new(p, BK_PLAN, plan));
    TRY(p->set(*plan, 400, BT_HANDLE, 1, &s->handle));
    TRY(p->set(*plan, 401, BT_DESC, 1, &cfg));
    TRY(p->finalize(*plan));                 /* a runtime-compiled engine compiles here (100-300 ms) */
    TRY(p->get(*plan, 402, BT_INT64, 1, &n, ws));
#undef TRY
    *outcome = 0;
    return 0;
}

static PyObject *int_tuple(const int *v, int64_t n) {
    PyObject *t = PyTuple_New((Py_ssize_t)(n < 0 ? 0 : n));
    for (int64_t i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SetItem(t, (Py_ssize_t)i, x);
    }
    return t;
}

/* cudnn_plan_build(fns, handle, dtype, op_kind, op_attrs, dims, strides, conv, align, engine, knobs, exclude,
 * defer_rtc) -> (0, plan, workspace, behaviour notes, descriptors) | (1, numerical notes) | (2, behaviour notes) */
static PyObject *cudnn_plan_build(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *fns, *op_attrs, *dims, *strides, *conv, *knob_seq, *exclude_seq;
    unsigned long long handle, align;
    long long engine;
    int dtype, op_kind, defer_rtc;
    if (!PyArg_ParseTuple(args, "OKiiOOOOKLOOp", &fns, &handle, &dtype, &op_kind, &op_attrs, &dims, &strides, &conv,
                          &align, &engine, &knob_seq, &exclude_seq, &defer_rtc))
        return NULL;
    heur_spec s;
    u64 f[5];
    if (parse_graph_args(fns, handle, dtype, op_kind, op_attrs, dims, strides, conv, align, &s, f) < 0) return NULL;
    int64_t knobs[2 * HEUR_KNOBS];
    int nk = 0, nex = 0, exclude[HEUR_NOTES];
    PyObject *kt = PySequence_Tuple(knob_seq);
    if (!kt) return NULL;
    Py_ssize_t nkt = PyTuple_Size(kt);
    if (nkt > HEUR_KNOBS) {
        Py_DECREF(kt);
        PyErr_SetString(PyExc_ValueError, "cudnn_plan_build: too many knobs");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nkt; i++) {
        int m = 0;
        if (tuple_i64(PyTuple_GetItem(kt, i), knobs + 2 * i, 2, &m, "knob") < 0 || m != 2) {
            Py_DECREF(kt);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "cudnn_plan_build: a knob is (type, value)");
            return NULL;
        }
    }
    nk = (int)nkt;
    Py_DECREF(kt);
    int64_t ex[HEUR_NOTES];
    if (tuple_i64(exclude_seq, ex, HEUR_NOTES, &nex, "exclude") < 0) return NULL;
    for (int i = 0; i < nex; i++) exclude[i] = (int)ex[i];
    heur_pool *p = new_pool(f);
    if (!p) return PyErr_NoMemory();
    void *plan = NULL;
    int64_t ws = 0, nn = 0, nb = 0;
    int notes[HEUR_NOTES], beh[HEUR_NOTES], outcome = -1, status = 0, step;
    Py_BEGIN_ALLOW_THREADS
    step = plan_build(p, &s, (int64_t)engine, knobs, nk, exclude, nex, defer_rtc, &plan, &ws, notes, &nn, beh, &nb,
                      &outcome, &status);
    if (step || outcome)
        for (int i = p->n - 1; i >= 0; i--) p->destroy(p->descs[i]);
    Py_END_ALLOW_THREADS
    PyObject *res = NULL;
    if (step) {
        PyErr_Format(PyExc_RuntimeError, "cudnn_plan_build: step %d failed with cudnnStatus %d", step, status);
    } else if (outcome == 1) {
        res = Py_BuildValue("(iN)", 1, int_tuple(notes, nn));
    } else if (outcome == 2) {
        res = Py_BuildValue("(iN)", 2, int_tuple(beh, nb));
    } else {
        PyObject *descs = PyTuple_New(p->n);
        for (int i = 0; descs && i < p->n; i++) {
            PyObject *d = PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)p->descs[i]);
            if (!d) {
                Py_CLEAR(descs);
                break;
            }
            PyTuple_SetItem(descs, i, d);
        }
        if (!descs) {   /* the descriptors cannot be handed over: destroyed here */
            for (int i = p->n - 1; i >= 0; i--) p->destroy(p->descs[i]);
        } else {
            res = Py_BuildValue("(iKLNN)", 0, (unsigned long long)(uintptr_t)plan, (long long)ws, int_tuple(beh, nb),
                                descs);
        }
    }
    free(p);
    return res;
}

/* pdl_launcher(ex) -> the address of pdl_launch, launching through ``ex`` (cuLaunchKernelEx's address) */
static PyObject *make_pdl_launcher(PyObject *mod, PyObject *arg) {
    (void)mod;
    u64 ex;
    if (as_u64(arg, &ex) < 0) return NULL;
    if (!ex) {
        PyErr_SetString(PyExc_ValueError, "pdl_launcher: null cuLaunchKernelEx");
        return NULL;
    }
    g_launch_ex = (launch_ex_fn)(uintptr_t)ex;
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)&pdl_launch);
}

/* -- the learned cost model's exit tables (miofind.costmodel._Exits) ------------------------------------------ */

/* numpy's pairwise sum of a[0..n) (loops_utils.h: below 8 values in turn from 0.0; up to 128 in 8 partial sums;
 * above, the two halves, the first a multiple of 8): the order in which ndarray.sum and ufunc.reduceat add along a
 * contiguous axis, so qs_score's sums equal the numpy scorer's bit for bit (IEEE doubles, no -ffast-math). */
static double pairwise_sum(const double *a, Py_ssize_t n) {
    if (n < 8) {
        double res = 0.;
        for (Py_ssize_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {   /* eight named partial sums: an array of them is kept in memory at -O2, three times slower */
        double r0 = a[0], r1 = a[1], r2 = a[2], r3 = a[3], r4 = a[4], r5 = a[5], r6 = a[6], r7 = a[7];
        Py_ssize_t i;
        for (i = 8; i < n - (n % 8); i += 8) {
            r0 += a[i]; r1 += a[i + 1]; r2 += a[i + 2]; r3 += a[i + 3];
            r4 += a[i + 4]; r5 += a[i + 5]; r6 += a[i + 6]; r7 += a[i + 7];
        }
        double res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
        for (; i < n; i++) res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* Four masks at a time (SSE2, NEON or plain registers: GCC's and Clang's vector extension); loads and stores
 * through memcpy, as table rows are aligned to 8 bytes only. */
typedef uint32_t v4u __attribute__((vector_size(16)));

static inline v4u load4(const uint32_t *p) {
    v4u x;
    memcpy(&x, p, sizeof x);
    return x;
}

/* dst[0..n) = a[0..n) & b[0..n) */
static void and_rows(uint32_t *dst, const uint32_t *a, const uint32_t *b, Py_ssize_t n) {
    Py_ssize_t t = 0;
    for (; t + 4 <= n; t += 4) {
        v4u x = load4(a + t) & load4(b + t);
        memcpy(dst + t, &x, sizeof x);
    }
    for (; t < n; t++) dst[t] = a[t] & b[t];
}

/* dst[0..n) &= the AND of rows r[0..4) */
static void and_four(uint32_t *dst, const uint32_t *const r[4], Py_ssize_t n) {
    Py_ssize_t t = 0;
    for (; t + 4 <= n; t += 4) {
        v4u x = load4(dst + t) & load4(r[0] + t) & load4(r[1] + t) & load4(r[2] + t) & load4(r[3] + t);
        memcpy(dst + t, &x, sizeof x);
    }
    for (; t < n; t++) dst[t] &= r[0][t] & r[1][t] & r[2][t] & r[3][t];
}

/* A list or tuple (any other sequence copied into a tuple): a new reference, its length in *n. */
static PyObject *open_seq(PyObject *o, Py_ssize_t *n) {
    PyObject *s;
    if (PyList_Check(o) || PyTuple_Check(o)) {
        Py_INCREF(o);
        s = o;
    } else if (!(s = PySequence_Tuple(o))) {
        return NULL;
    }
    *n = PyList_Check(s) ? PyList_Size(s) : PyTuple_Size(s);
    return s;
}

/* Item i of open_seq's result as a table row below nrows into *out (IndexError out of range). */
static int row_at(PyObject *s, Py_ssize_t i, u64 nrows, uint32_t *out) {
    PyObject *o = PyList_Check(s) ? PyList_GetItem(s, i) : PyTuple_GetItem(s, i);
    if (!o) return -1;
    long long v = PyLong_AsLongLong(o);   /* ints, and anything with __index__ (numpy integers) */
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || (u64)v >= nrows) {
        PyErr_Format(PyExc_IndexError, "table row %lld out of range (%llu rows)", v, (unsigned long long)nrows);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* The table rows of each pair, flat: pair i's are idx[start[i] .. start[i + 1]), per_row's then more's. */
static int pair_rows(PyObject *per_row, PyObject *more, u64 nrows, Py_ssize_t *np_out, uint32_t **idx_out,
                     Py_ssize_t **start_out) {
    Py_ssize_t k, n = -1, nm = 0, total;
    PyObject *lists = open_seq(per_row, &k), *ms = NULL;
    PyObject *cols[8] = {NULL};
    uint32_t *idx = NULL;
    Py_ssize_t *start = NULL;
    int rc = -1;
    if (!lists) return -1;
    if (k < 1 || k > 8) {
        PyErr_Format(PyExc_ValueError, "qs_score: 1 to 8 per-row lists, got %zd", k);
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        Py_ssize_t len;
        PyObject *item = PyList_Check(lists) ? PyList_GetItem(lists, j) : PyTuple_GetItem(lists, j);
        if (!item || !(cols[j] = open_seq(item, &len))) goto done;
        if (n >= 0 && len != n) {
            PyErr_SetString(PyExc_ValueError, "qs_score: per-row lists of unequal length");
            goto done;
        }
        n = len;
    }
    total = n * k;
    if (more != Py_None) {
        if (!(ms = open_seq(more, &nm))) goto done;
        if (nm != n) {
            PyErr_Format(PyExc_ValueError, "qs_score: %zd lists in more for %zd rows", nm, n);
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PyList_Check(ms) ? PyList_GetItem(ms, i) : PyTuple_GetItem(ms, i);
            Py_ssize_t len = item ? PySequence_Size(item) : -1;
            if (len < 0) goto done;
            total += len;
        }
    }
    idx = (uint32_t *)PyMem_Malloc(sizeof(uint32_t) * (size_t)(total + 1));
    start = (Py_ssize_t *)PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    if (!idx || !start) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        start[i] = at;
        for (Py_ssize_t j = 0; j < k; j++)
            if (row_at(cols[j], i, nrows, &idx[at++]) < 0) goto done;
        if (ms) {
            Py_ssize_t len;
            PyObject *item = PyList_Check(ms) ? PyList_GetItem(ms, i) : PyTuple_GetItem(ms, i);
            PyObject *s = open_seq(item, &len);
            if (!s) goto done;
            if (at + len > total) {   /* a list that grew since it was counted */
                PyErr_SetString(PyExc_RuntimeError, "qs_score: more changed size");
                Py_DECREF(s);
                goto done;
            }
            for (Py_ssize_t j = 0; j < len; j++) {
                if (row_at(s, j, nrows, &idx[at++]) < 0) {
                    Py_DECREF(s);
                    goto done;
                }
            }
            Py_DECREF(s);
        }
    }
    start[n] = at;
    *np_out = n;
    *idx_out = idx;
    *start_out = start;
    idx = NULL;
    start = NULL;
    rc = 0;
done:
    for (int j = 0; j < 8; j++) Py_XDECREF(cols[j]);
    Py_XDECREF(ms);
    Py_DECREF(lists);
    PyMem_Free(idx);
    PyMem_Free(start);
    return rc;
}

/* qs_score(table, nrows, width, values, ntrees, cut, common, per_row, more) -> bytearray of doubles.
 *
 * What costmodel._Exits.score computes with numpy, for a table and leaf values passed by address (the limited API of
 * 3.10 has no buffer protocol; the caller keeps both arrays alive). Row i ANDs the table rows per_row[j][i] for each
 * j, those of more[i] (more: None or a list per row) and the common rows (ANDed once); tree t's exit leaf is the
 * highest set bit b of its 32-bit mask, its value values[32 t + b]. Per row, the sum over the trees (cut None), or the
 * sums over trees [0, cut) and [cut, ntrees) (n of each, the first n then the second), in numpy's order. */
static PyObject *qs_score(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "qs_score takes 9 arguments (table, nrows, width, values, ntrees, cut, common, "
                     "per_row, more): %zd given", nargs);
        return NULL;
    }
    u64 table_a, nrows, width, values_a, ntrees, cut = 0;
    if (as_u64(args[0], &table_a) < 0 || as_u64(args[1], &nrows) < 0 || as_u64(args[2], &width) < 0 ||
        as_u64(args[3], &values_a) < 0 || as_u64(args[4], &ntrees) < 0 ||
        (args[5] != Py_None && as_u64(args[5], &cut) < 0))
        return NULL;
    const int with_cut = args[5] != Py_None;
    if (!table_a || !values_a || !nrows || !ntrees || width < ntrees || width > (1u << 24) || nrows > (1u << 30) ||
        (with_cut && (cut < 1 || cut >= ntrees))) {
        PyErr_SetString(PyExc_ValueError, "qs_score: a null table or values, no rows or trees, width < ntrees, "
                        "or a cut outside 1 .. ntrees - 1");
        return NULL;
    }
    const uint32_t *table = (const uint32_t *)(uintptr_t)table_a;
    const double *values = (const double *)(uintptr_t)values_a;
    const Py_ssize_t nt = (Py_ssize_t)ntrees, w = (Py_ssize_t)width;

    Py_ssize_t n = 0, nc;
    uint32_t *idx = NULL, *common_rows = NULL;
    Py_ssize_t *start = NULL;
    PyObject *common = open_seq(args[6], &nc);
    if (!common) return NULL;
    PyObject *out = NULL;
    uint32_t *masks = NULL;
    common_rows = (uint32_t *)PyMem_Malloc(sizeof(uint32_t) * (size_t)(nc + 1));
    if (!common_rows) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < nc; j++)
        if (row_at(common, j, nrows, &common_rows[j]) < 0) goto done;
    if (pair_rows(args[7], args[8], nrows, &n, &idx, &start) < 0) goto done;
    /* the common rows' AND and one row's, then that row's leaf values */
    masks = (uint32_t *)PyMem_Malloc(sizeof(uint32_t) * 2 * (size_t)nt + sizeof(double) * (size_t)nt);
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)sizeof(double) * n * (with_cut ? 2 : 1));
    if (!masks || !out) {
        if (!masks) PyErr_NoMemory();
        Py_CLEAR(out);
        goto done;
    }
    double *res = (double *)PyByteArray_AsString(out);
    Py_BEGIN_ALLOW_THREADS
    uint32_t *cm = masks, *m = masks + nt;
    double *v = (double *)(masks + 2 * nt);
    for (Py_ssize_t t = 0; t < nt; t++) cm[t] = 0xFFFFFFFFu;
    Py_ssize_t j = 0;
    for (; j + 4 <= nc; j += 4) {
        const uint32_t *r[4];
        for (int q = 0; q < 4; q++) r[q] = table + (size_t)common_rows[j + q] * (size_t)w;
        and_four(cm, r, nt);
    }
    for (; j < nc; j++) and_rows(cm, cm, table + (size_t)common_rows[j] * (size_t)w, nt);
    for (Py_ssize_t i = 0; i < n; i++) {
        /* the rows before the last two into m; the last two ANDed as the leaves are read */
        const Py_ssize_t first = start[i], last = start[i + 1] - 1;
        const uint32_t *base = cm;
        for (Py_ssize_t a = first; a < last - 1; a++, base = m)
            and_rows(m, base, table + (size_t)idx[a] * (size_t)w, nt);
        const uint32_t *ra = table + (size_t)idx[last > first ? last - 1 : last] * (size_t)w;
        const uint32_t *rb = table + (size_t)idx[last] * (size_t)w;
        for (Py_ssize_t t = 0; t < nt; t++) {
            /* the exit leaf: the highest set bit (never none in a built table: a tree's rightmost leaf is ruled
               out by no node; numpy's frexp would give exponent 0 there, the index 32 t - 1, wrapping at t = 0) */
            const uint32_t x = base[t] & ra[t] & rb[t];
            v[t] = values[x ? 32 * t + 31 - __builtin_clz(x) : (t ? 32 * t - 1 : 32 * nt - 1)];
        }
        if (!with_cut) {
            res[i] = 0. + pairwise_sum(v, nt);   /* ndarray.sum: the identity, then the pairwise sum */
        } else {   /* ufunc.reduceat: each part's first value, then the pairwise sum of the rest */
            const Py_ssize_t c = (Py_ssize_t)cut;
            res[i] = v[0] + pairwise_sum(v + 1, c - 1);
            res[n + i] = v[c] + pairwise_sum(v + c + 1, nt - c - 1);
        }
    }
    Py_END_ALLOW_THREADS
done:
    Py_DECREF(common);
    PyMem_Free(common_rows);
    PyMem_Free(idx);
    PyMem_Free(start);
    PyMem_Free(masks);
    return out;
}

/* qs_lookup's state: per feature, its position in the values and its count of sorted thresholds, which start at thr
 * in the flat threshold array and are followed by count + 1 table rows from row on in the flat row array. */
typedef struct {
    Py_ssize_t index, count, thr, row;
} look_feature_t;

typedef struct {
    Py_ssize_t nfeat, need;      /* need: the values' least length (the highest index + 1) */
    look_feature_t *feat;
    double *thr;
    long long *rows;
} lookup_t;

static const char LOOKUP_CAPSULE[] = "miofind._native.lookup";

static void free_capsule_lookup(PyObject *cap) { free(PyCapsule_GetPointer(cap, LOOKUP_CAPSULE)); }

/* rows(values) -> [rows[bisect_left(thresholds, values[index])] for each feature]: bisect.bisect_left on doubles */
static PyObject *lookup_call(PyObject *self, PyObject *arg) {
    const lookup_t *L = (const lookup_t *)PyCapsule_GetPointer(self, LOOKUP_CAPSULE);
    if (!L) return NULL;
    Py_ssize_t nv;
    PyObject *vals = open_seq(arg, &nv);
    if (!vals) return NULL;
    PyObject *out = NULL;
    if (nv < L->need) {
        PyErr_Format(PyExc_ValueError, "rows: %zd values, expected at least %zd", nv, L->need);
        goto done;
    }
    if (!(out = PyList_New(L->nfeat))) goto done;
    for (Py_ssize_t j = 0; j < L->nfeat; j++) {
        const look_feature_t *F = &L->feat[j];
        PyObject *o = PyList_Check(vals) ? PyList_GetItem(vals, F->index) : PyTuple_GetItem(vals, F->index);
        double x = o ? PyFloat_AsDouble(o) : -1.0;
        if (x == -1.0 && PyErr_Occurred()) {
            Py_CLEAR(out);
            goto done;
        }
        const double *th = L->thr + F->thr;
        Py_ssize_t lo = 0, hi = F->count;
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) / 2;
            if (th[mid] < x) lo = mid + 1;
            else hi = mid;
        }
        PyObject *row = PyLong_FromLongLong(L->rows[F->row + lo]);
        if (!row || PyList_SetItem(out, j, row) < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    Py_DECREF(vals);
    return out;
}

static PyMethodDef lookup_def = {"rows", lookup_call, METH_O,
                                 "rows(values) -> [rows[bisect_left(thresholds, values[index])] per feature]"};

/* qs_lookup(features) -> rows; features: (index, sorted thresholds, table row per count) each */
static PyObject *make_lookup(PyObject *mod, PyObject *arg) {
    (void)mod;
    Py_ssize_t nf, nthr = 0;
    PyObject *feats = open_seq(arg, &nf), *parts[3] = {NULL, NULL, NULL};
    if (!feats) return NULL;
    lookup_t *L = NULL;
    /* first pass: the sizes */
    for (Py_ssize_t j = 0; j < nf; j++) {
        PyObject *f = PyList_Check(feats) ? PyList_GetItem(feats, j) : PyTuple_GetItem(feats, j);
        Py_ssize_t n = f ? PySequence_Size(f) : -1, nt;
        if (n != 3) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "qs_lookup: feature %zd is not (index, thresholds, "
                                                "rows)", j);
            goto fail;
        }
        PyObject *th = PySequence_GetItem(f, 1);
        nt = th ? PySequence_Size(th) : -1;
        Py_XDECREF(th);
        if (nt < 0) goto fail;
        nthr += nt;
    }
    size_t head = sizeof(lookup_t) + sizeof(look_feature_t) * (size_t)nf;
    head = (head + 7) & ~(size_t)7;
    L = (lookup_t *)calloc(1, head + sizeof(double) * (size_t)nthr + sizeof(long long) * (size_t)(nthr + nf));
    if (!L) {
        PyErr_NoMemory();
        goto fail;
    }
    L->nfeat = nf;
    L->feat = (look_feature_t *)(L + 1);
    L->thr = (double *)((char *)L + head);
    L->rows = (long long *)(L->thr + nthr);
    Py_ssize_t at = 0;
    for (Py_ssize_t j = 0; j < nf; j++) {
        PyObject *f = PyList_Check(feats) ? PyList_GetItem(feats, j) : PyTuple_GetItem(feats, j);
        Py_ssize_t nt, nr;
        for (int q = 0; q < 3; q++)
            if (!(parts[q] = PySequence_GetItem(f, q))) goto fail;
        look_feature_t *F = &L->feat[j];
        F->index = PyLong_AsSsize_t(parts[0]);
        if (F->index == -1 && PyErr_Occurred()) goto fail;
        nt = PySequence_Size(parts[1]);
        nr = PySequence_Size(parts[2]);
        if (F->index < 0 || nt < 0 || nr != nt + 1 || at + nt > nthr) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "qs_lookup: feature %zd: a negative index, or not "
                                                "one more row than thresholds", j);
            goto fail;
        }
        F->count = nt;
        F->thr = at;
        F->row = at + j;
        for (Py_ssize_t q = 0; q <= nt; q++) {
            PyObject *o;
            if (q < nt) {
                if (!(o = PySequence_GetItem(parts[1], q))) goto fail;
                L->thr[at + q] = PyFloat_AsDouble(o);
                Py_DECREF(o);
                if (L->thr[at + q] == -1.0 && PyErr_Occurred()) goto fail;
            }
            if (!(o = PySequence_GetItem(parts[2], q))) goto fail;
            L->rows[at + j + q] = PyLong_AsLongLong(o);
            Py_DECREF(o);
            if (L->rows[at + j + q] == -1 && PyErr_Occurred()) goto fail;
        }
        at += nt;
        if (F->index + 1 > L->need) L->need = F->index + 1;
        for (int q = 0; q < 3; q++) Py_CLEAR(parts[q]);
    }
    Py_DECREF(feats);
    return bind_state(L, LOOKUP_CAPSULE, free_capsule_lookup, &lookup_def);
fail:
    for (int q = 0; q < 3; q++) Py_XDECREF(parts[q]);
    Py_DECREF(feats);
    free(L);
    return NULL;
}

/* nb_features(sizes, shape, have, rel, tpf, n, ncols, here, sh, pen, cols, k, drop, lpf, bases, missing)
 * -> bytearray of doubles (miofind.neighbours.NeighbourTable.features): one kind's n known problems, the addresses of
 * C-contiguous float64 sizes [n, 5], int64 shape [n, 4], uint8 have [n, ncols], float64 rel and tpf [n, ncols], and
 * uint8 drop [n] (0: none). Distance to problem i: sum |sizes[i] - here| (in order, from 0.0) + (pen0 (shape0 differs)
 * + pen1 (shape1 differs)) + (pen2 (shape2 differs) + pen3 (shape3 differs)), infinite where drop[i]. Per asked row,
 * its column c (-1: none): the first k problems with have[i, c] in (distance, index) order, w = 1 / (1 + distance),
 * shift = lpf - bases[row]; out: 5 doubles per row, rel and tpf + shift of the nearest, its distance, sum(w rel) /
 * sum(w) and sum(w tpf) / sum(w) + shift (sums nearest first), or the 5 missing values where none is found. The same
 * operations as the numpy path (_features_numpy), in the same order. */
static PyObject *nb_features(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 16) {
        PyErr_Format(PyExc_TypeError, "nb_features(sizes, shape, have, rel, tpf, n, ncols, here, sh, pen, cols, k, "
                     "drop, lpf, bases, missing): %zd given", nargs);
        return NULL;
    }
    const u64 a_sizes = PyLong_AsUnsignedLongLong(args[0]), a_shape = PyLong_AsUnsignedLongLong(args[1]),
              a_have = PyLong_AsUnsignedLongLong(args[2]), a_rel = PyLong_AsUnsignedLongLong(args[3]),
              a_tpf = PyLong_AsUnsignedLongLong(args[4]);
    const Py_ssize_t n = PyLong_AsSsize_t(args[5]), ncols = PyLong_AsSsize_t(args[6]), k = PyLong_AsSsize_t(args[11]);
    const u64 a_drop = PyLong_AsUnsignedLongLong(args[12]);
    const double lpf = PyFloat_AsDouble(args[13]);
    if (PyErr_Occurred()) return NULL;
    if (n < 0 || ncols < 0 || k < 1 || k > 64 || !a_sizes || !a_shape || (ncols && (!a_have || !a_rel || !a_tpf))) {
        PyErr_SetString(PyExc_ValueError, "nb_features: a null array, a negative size, or k outside 1-64");
        return NULL;
    }
    double here[5], pen[4], miss[5];
    long long sh[4];
    Py_ssize_t nh, ns, np_, nc, nb, nm;
    PyObject *h = open_seq(args[7], &nh), *s = h ? open_seq(args[8], &ns) : NULL, *p = s ? open_seq(args[9], &np_) : NULL,
             *c = p ? open_seq(args[10], &nc) : NULL, *b = c ? open_seq(args[14], &nb) : NULL,
             *ms = b ? open_seq(args[15], &nm) : NULL, *out = NULL;
    long long *colv = NULL;
    double *d = NULL, *basev = NULL;
    if (!ms) goto done;
    if (nh != 5 || ns != 4 || np_ != 4 || nm != 5 || nb != nc) {
        PyErr_SetString(PyExc_ValueError, "nb_features: here and missing have 5 values, sh and pen 4, bases one per "
                        "column");
        goto done;
    }
    for (int j = 0; j < 5; j++) miss[j] = PyFloat_AsDouble(PyList_Check(ms) ? PyList_GetItem(ms, j) : PyTuple_GetItem(ms, j));
    for (int j = 0; j < 5; j++) {
        here[j] = PyFloat_AsDouble(PyList_Check(h) ? PyList_GetItem(h, j) : PyTuple_GetItem(h, j));
        if (j < 4) {
            sh[j] = PyLong_AsLongLong(PyList_Check(s) ? PyList_GetItem(s, j) : PyTuple_GetItem(s, j));
            pen[j] = PyFloat_AsDouble(PyList_Check(p) ? PyList_GetItem(p, j) : PyTuple_GetItem(p, j));
        }
    }
    if (PyErr_Occurred()) goto done;
    colv = (long long *)malloc(sizeof(long long) * (size_t)(nc ? nc : 1));
    basev = (double *)malloc(sizeof(double) * (size_t)(nc ? nc : 1));
    d = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!colv || !d || !basev) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < nc; j++) {
        colv[j] = PyLong_AsLongLong(PyList_Check(c) ? PyList_GetItem(c, j) : PyTuple_GetItem(c, j));
        if (colv[j] == -1 && PyErr_Occurred()) goto done;
        basev[j] = PyFloat_AsDouble(PyList_Check(b) ? PyList_GetItem(b, j) : PyTuple_GetItem(b, j));
        if (basev[j] == -1.0 && PyErr_Occurred()) goto done;
        if (colv[j] < -1 || colv[j] >= ncols) {
            PyErr_Format(PyExc_IndexError, "nb_features: column %lld out of range (%zd columns)", colv[j], ncols);
            goto done;
        }
    }
    const double *sizes = (const double *)(uintptr_t)a_sizes;
    const long long *shape = (const long long *)(uintptr_t)a_shape;
    const unsigned char *have = (const unsigned char *)(uintptr_t)a_have, *drop = (const unsigned char *)(uintptr_t)a_drop;
    const double *rel = (const double *)(uintptr_t)a_rel, *tpf = (const double *)(uintptr_t)a_tpf;
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = 0.0;
        for (int j = 0; j < 5; j++) v += fabs(sizes[i * 5 + j] - here[j]);
        const long long *q = shape + i * 4;
        v += pen[0] * (double)(q[0] != sh[0]) + pen[1] * (double)(q[1] != sh[1]);
        v += pen[2] * (double)(q[2] != sh[2]) + pen[3] * (double)(q[3] != sh[3]);
        d[i] = (drop && drop[i]) ? HUGE_VAL : v;
    }
    if (!(out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(sizeof(double) * 5 * (size_t)nc)))) goto done;
    double *o = (double *)PyByteArray_AsString(out);
    double bd[64];
    Py_ssize_t bi[64];
    for (Py_ssize_t j = 0; j < nc; j++) {
        const Py_ssize_t col = (Py_ssize_t)colv[j];
        Py_ssize_t m = 0;   /* the k nearest so far, by (distance, index): a later index never passes an equal one */
        for (Py_ssize_t i = 0; col >= 0 && i < n; i++) {
            if (!have[i * ncols + col] || !(d[i] < HUGE_VAL)) continue;
            if (m == k && !(d[i] < bd[m - 1])) continue;
            Py_ssize_t at = m < k ? m++ : k - 1;
            while (at > 0 && d[i] < bd[at - 1]) {
                bd[at] = bd[at - 1];
                bi[at] = bi[at - 1];
                at--;
            }
            bd[at] = d[i];
            bi[at] = i;
        }
        double *r = o + 5 * j;
        if (!m) {
            for (int q = 0; q < 5; q++) r[q] = miss[q];
            continue;
        }
        double ws = 0.0, wr = 0.0, wt = 0.0;
        for (Py_ssize_t q = 0; q < m; q++) {
            const double w = 1.0 / (1.0 + bd[q]);
            const Py_ssize_t x = bi[q] * ncols + col;
            ws += w;
            wr += w * rel[x];
            wt += w * tpf[x];
        }
        const double shift = lpf - basev[j];
        r[0] = rel[bi[0] * ncols + col];
        r[1] = tpf[bi[0] * ncols + col] + shift;
        r[2] = bd[0];
        r[3] = wr / ws;
        r[4] = wt / ws + shift;
    }
done:
    free(colv);
    free(basev);
    free(d);
    Py_XDECREF(h);
    Py_XDECREF(s);
    Py_XDECREF(p);
    Py_XDECREF(c);
    Py_XDECREF(b);
    Py_XDECREF(ms);
    return out;
}

/* mlp_score(rows, nrows, h0, slots, pf, wp, base, wbase, layers) -> bytearray of n doubles.
 *
 * The learned cost model's perceptron on one problem's n rows (miofind.costmodel.CostModel._perceptron_log_ms): row i's
 * first-layer sums are rows[slots[i]] (its solver, family and config part with the bias, a row of the C-contiguous
 * float64 [nrows, h0] array at address rows) + pf . wp (the problem's part: pf, a list of np values; wp, the address of
 * float64 [np, h0]) + base[i] * wbase (wbase: float64 [h0]); then ReLU, and per layer of layers (a flat list of
 * w address, b address, inputs, outputs: float64 [inputs, outputs] and [outputs]) h . w + b, ReLU but after the last,
 * which has one output. Row i's result is base[i] + that output. The caller keeps the arrays alive. */
static PyObject *mlp_score(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "mlp_score(rows, nrows, h0, slots, pf, wp, base, wbase, layers): %zd given",
                     nargs);
        return NULL;
    }
    u64 rows_a, nrows, h0, wp_a, wbase_a;
    if (as_u64(args[0], &rows_a) < 0 || as_u64(args[1], &nrows) < 0 || as_u64(args[2], &h0) < 0 ||
        as_u64(args[5], &wp_a) < 0 || as_u64(args[7], &wbase_a) < 0)
        return NULL;
    if (!rows_a || !wp_a || !wbase_a || !h0 || h0 > 4096) {
        PyErr_SetString(PyExc_ValueError, "mlp_score: a null array, or a first layer of 0 or more than 4096 units");
        return NULL;
    }
    Py_ssize_t n, npf, nb, nl;
    PyObject *slots = open_seq(args[3], &n), *pf = slots ? open_seq(args[4], &npf) : NULL,
             *base = pf ? open_seq(args[6], &nb) : NULL, *layers = base ? open_seq(args[8], &nl) : NULL, *out = NULL;
    double *buf = NULL, *pvec, *basev;
    u64 *lay = NULL;
    uint32_t *slot = NULL;
    if (!layers) goto done;
    if (nb != n || nl < 4 || nl % 4 || nl > 4 * 16) {
        PyErr_SetString(PyExc_ValueError, "mlp_score: base needs one value per slot, layers 1-16 (w, b, in, out)");
        goto done;
    }
    lay = (u64 *)PyMem_Malloc(sizeof(u64) * (size_t)nl);
    slot = (uint32_t *)PyMem_Malloc(sizeof(uint32_t) * (size_t)(n + 1));
    if (!lay || !slot) {
        PyErr_NoMemory();
        goto done;
    }
    u64 width = h0, widest = h0;
    for (Py_ssize_t j = 0; j < nl; j++) {
        PyObject *o = PyList_Check(layers) ? PyList_GetItem(layers, j) : PyTuple_GetItem(layers, j);
        if (!o || as_u64(o, &lay[j]) < 0) goto done;
    }
    for (Py_ssize_t j = 0; j < nl; j += 4) {
        if (!lay[j] || !lay[j + 1] || lay[j + 2] != width || !lay[j + 3] || lay[j + 3] > 4096) {
            PyErr_SetString(PyExc_ValueError, "mlp_score: a null layer, or one whose inputs are not the outputs before");
            goto done;
        }
        width = lay[j + 3];
        if (width > widest) widest = width;
    }
    if (width != 1) {
        PyErr_SetString(PyExc_ValueError, "mlp_score: the last layer must have one output");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (row_at(slots, i, nrows, &slot[i]) < 0) goto done;
    /* the problem's part, then per row two buffers of the widest layer */
    buf = (double *)PyMem_Malloc(sizeof(double) * (size_t)(h0 + (u64)n + 2 * widest));
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)sizeof(double) * n);
    if (!buf || !out) {
        if (!buf) PyErr_NoMemory();
        Py_CLEAR(out);
        goto done;
    }
    pvec = buf;
    basev = buf + h0;
    const double *wp = (const double *)(uintptr_t)wp_a, *wbase = (const double *)(uintptr_t)wbase_a;
    const double *rows = (const double *)(uintptr_t)rows_a;
    for (u64 k = 0; k < h0; k++) pvec[k] = 0.0;
    for (Py_ssize_t j = 0; j < npf; j++) {
        PyObject *o = PyList_Check(pf) ? PyList_GetItem(pf, j) : PyTuple_GetItem(pf, j);
        const double v = o ? PyFloat_AsDouble(o) : -1.0;
        if (PyErr_Occurred()) {
            Py_CLEAR(out);
            goto done;
        }
        const double *w = wp + (u64)j * h0;
        for (u64 k = 0; k < h0; k++) pvec[k] += v * w[k];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_Check(base) ? PyList_GetItem(base, i) : PyTuple_GetItem(base, i);
        basev[i] = o ? PyFloat_AsDouble(o) : -1.0;
        if (PyErr_Occurred()) {
            Py_CLEAR(out);
            goto done;
        }
    }
    double *res = (double *)PyByteArray_AsString(out);
    double *a = basev + n, *b = a + widest;
    for (Py_ssize_t i = 0; i < n; i++) {
        const double *r = rows + (u64)slot[i] * h0;
        for (u64 k = 0; k < h0; k++) {
            const double x = r[k] + pvec[k] + basev[i] * wbase[k];
            a[k] = x > 0.0 ? x : 0.0;
        }
        u64 in = h0;
        for (Py_ssize_t j = 0; j < nl; j += 4) {
            const double *w = (const double *)(uintptr_t)lay[j], *bias = (const double *)(uintptr_t)lay[j + 1];
            const u64 o = lay[j + 3];
            for (u64 k = 0; k < o; k++) b[k] = bias[k];
            for (u64 q = 0; q < in; q++) {
                const double v = a[q], *wr = w + q * o;
                if (v != 0.0)
                    for (u64 k = 0; k < o; k++) b[k] += v * wr[k];
            }
            if (j + 4 < nl)
                for (u64 k = 0; k < o; k++) b[k] = b[k] > 0.0 ? b[k] : 0.0;
            double *t = a;
            a = b;
            b = t;
            in = o;
        }
        res[i] = basev[i] + a[0];
    }
done:
    Py_XDECREF(slots);
    Py_XDECREF(pf);
    Py_XDECREF(base);
    Py_XDECREF(layers);
    PyMem_Free(buf);
    PyMem_Free(lay);
    PyMem_Free(slot);
    return out;
}

static PyMethodDef methods[] = {
    {"launcher", make_launcher, METH_VARARGS,
     "launcher(fn, func, grid, block, shared_mem, values, slots, maps) -> launch(stream, *map_addresses, *pointers)\n\n"
     "fn: the address of cuLaunchKernel; func: the CUfunction; values: each kernel parameter's bytes as an int\n"
     "(little-endian, at most 8 bytes); slots: the parameters that take the call's pointers, in order; maps: the\n"
     "parameters passed by a host address given per call (tensor maps). The launch returns the CUresult."},
    {"pdl_launcher", make_pdl_launcher, METH_O,
     "pdl_launcher(ex) -> fn\n\n"
     "ex: the address of cuLaunchKernelEx; fn: the address of a function of cuLaunchKernel's signature that launches\n"
     "through it as the programmatic dependent of the stream's work before (launcher()'s fn)."},
    {"caller", make_caller, METH_VARARGS,
     "caller(fn, values, slots) -> call(*changing)\n\n"
     "fn: the address of a C function of len(values) 64-bit integer or pointer arguments returning int;\n"
     "slots: the argument positions that each call passes, in order. The call returns the function's status."},
    {"recipe", make_recipe, METH_VARARGS,
     "recipe(fn, steps, align) -> run(stream, a, b, out, workspace)\n\n"
     "fn: the address of cuLaunchKernel; steps: (kind, func, grid, block, shared_mem, values, slots) each, kind 0 a\n"
     "kernel launch (func the CUfunction), 1 a library call (func a C function of len(values) 64-bit arguments),\n"
     "3 a kernel launch as the programmatic dependent of the step before (see pdl_launcher);\n"
     "slots: (parameter, role, byte offset) of each pointer written per call, role 0-3 the run's a, b, out,\n"
     "workspace; align: what each role's address must be a multiple of. run returns 0, -1 (an address misaligned:\n"
     "nothing ran) or (step, status) of the step that failed."},
    {"cudnn_runner", cudnn_runner, METH_NOARGS,
     "cudnn_runner() -> (fn, ctx_size)\n\n"
     "fn: the address of int run(ctx, a, b, out, workspace), a library call (recipe kind 1) running one cuDNN\n"
     "execution plan through the backend API; ctx: the address of a context of ctx_size bytes (the addresses of\n"
     "cudnnBackendCreateDescriptor, SetAttribute, Finalize, Execute, DestroyDescriptor and cudnnSetStream, the\n"
     "device's handle, the plan, the stream, a lock word's address, the three unique ids;\n"
     "miofind.solvers.cudnn_execute.NativeRun). Sets the stream on the handle and runs the plan under the lock.\n"
     "Returns the first failing cudnnStatus_t, 0 on success."},
    {"cudnn_heuristics", cudnn_heuristics, METH_VARARGS,
     "cudnn_heuristics(fns, handle, dtype, op_kind, op_attrs, dims, strides, conv, modes, align) -> (configs, statuses)\n\n"
     "cuDNN's heuristics for one convolution through the backend API, the GIL released throughout: fns, the addresses\n"
     "of cudnnBackendCreateDescriptor, DestroyDescriptor, SetAttribute, GetAttribute and Finalize; the operation\n"
     "graph of the three tensors (uids 1-3: dims, strides, data type, byte alignment), the convolution (conv:\n"
     "dilations, strides, pre and post paddings) and the operation (op_kind, op_attrs: its a, b, out, alpha, beta and\n"
     "descriptor attributes) on handle; modes: cudnnBackendHeurMode_t values asked in turn. configs: (engine global\n"
     "index, ((knob type, value), ...), numerical notes, behaviour notes) per engine config in order (a notes tuple\n"
     "None where cuDNN would not give it); statuses: each mode's failing status or 0.\n"
     "RuntimeError where a step of building the graph or reading a config fails."},
    {"cudnn_plan_build", cudnn_plan_build, METH_VARARGS,
     "cudnn_plan_build(fns, handle, dtype, op_kind, op_attrs, dims, strides, conv, align, engine, knobs, exclude,\n"
     "defer_rtc) -> (0, plan, workspace, behaviour notes, descriptors) | (1, numerical notes) | (2, behaviour notes)\n\n"
     "One execution plan of the convolution (cudnn_heuristics' graph arguments) built through the backend API, the GIL\n"
     "released throughout: the engine (global index) and its knob choices ((type, value) pairs); 1 where the engine\n"
     "carries a numerical note in exclude, 2 where defer_rtc and it compiles when built (neither compiles anything).\n"
     "Built: the caller owns the descriptors (destroy them after the plan). RuntimeError where a step fails."},
    {"qs_score", (PyCFunction)(void (*)(void))qs_score, METH_FASTCALL,
     "qs_score(table, nrows, width, values, ntrees, cut, common, per_row, more) -> bytearray of doubles\n\n"
     "The learned cost model's exit-table scorer (miofind.costmodel._Exits.score): table, the address of a\n"
     "C-contiguous uint32 [nrows, width] table; values, of float64 [ntrees * 32] leaf values (both kept alive by the caller);\n"
     "common: table rows ANDed into every row; per_row: lists of one table row per row; more: None or a list of table\n"
     "rows per row. Per row, the sum of its trees' exit leaf values (cut None), or the sums over trees [0, cut) and\n"
     "[cut, ntrees) (all rows' first sums, then their second), added in numpy's order."},
    {"qs_lookup", make_lookup, METH_O,
     "qs_lookup(features) -> rows(values)\n\n"
     "features: (index, sorted thresholds, table row per count) each, with one more row than thresholds;\n"
     "rows(values) gives [rows[bisect.bisect_left(thresholds, values[index])] for each feature] (values: floats)."},
    {"nb_features", (PyCFunction)(void (*)(void))nb_features, METH_FASTCALL,
     "nb_features(sizes, shape, have, rel, tpf, n, ncols, here, sh, pen, cols, k, drop, lpf, bases, missing)\n"
     "-> bytearray of doubles\n\n"
     "The learned cost model's neighbour features (miofind.neighbours.NeighbourTable.features) over one kind's n known\n"
     "problems (array addresses; see the source): 5 doubles per asked column (-1: none), the features or missing."},
    {"mlp_score", (PyCFunction)(void (*)(void))mlp_score, METH_FASTCALL,
     "mlp_score(rows, nrows, h0, slots, pf, wp, base, wbase, layers) -> bytearray of doubles\n\n"
     "The learned cost model's perceptron (miofind.costmodel.CostModel._perceptron_log_ms) on one problem's rows, its\n"
     "first layer summed from a memoised row part (rows[slots[i]]), the problem's part (pf . wp) and the roofline part\n"
     "(base[i] * wbase); layers: w, b, inputs, outputs of each layer after the first (array addresses; see the source).\n"
     "Per row, base[i] + the output."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native",
                                    "miofind's native hot path: packed kernel launches and library calls, and the "
                                    "cost model's exit-table scorer", -1,
                                    methods};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "MAX_PARAMS", MAX_PARAMS) < 0 || PyModule_AddIntConstant(m, "MAX_CELLS", MAX_CELLS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_CALL_ARGS", MAX_CALL_ARGS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_STEPS", MAX_STEPS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
