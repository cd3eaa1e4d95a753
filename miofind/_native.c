/* miofind._native: the hot path's two foreign calls without ctypes' or CuPy's per-call argument handling.
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
 * and runs every step in order with the GIL released once. Built against the limited API (abi3) of Python 3.10, so one binary
 * serves every later CPython.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
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
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native",
                                    "miofind's native hot path: packed kernel launches and library calls", -1,
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
