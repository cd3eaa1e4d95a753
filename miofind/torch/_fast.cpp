// miofind.torch's C++ hot path: a planned convolution's forward and its backward as a C++ autograd Function.
//
// A FastPlan holds, per direction (F, B, W), either a recipe (the solution's kernel launches with their argument
// blocks packed once, each pointer argument named as a role: a, b, out, workspace or bias, plus a byte offset; each
// tensor-map argument as the map of a role's address, from its encode fields) or nothing. A direction with a
// recipe launches from C++: the output from PyTorch's caching allocator, the workspace one kept buffer per
// (device, stream), tensor maps encoded once per (spec, pointer) and kept, cuLaunchKernel through the driver's
// function pointer. A traced recipe (GEMM, Winograd) may also hold library calls (cublasLtMatmul, through its
// function pointer, its argument block packed as a launch's), which carry the stream they were traced on: it runs
// on that stream alone. A direction without a recipe (a cuDNN plan, cuFFT), another stream, a misaligned pointer,
// a map the driver will not encode, a stream under CUDA-graph capture, or a plan turned off calls the Python
// fallback given
// at construction (functional._Plan's own forward and backward; in backward, for that direction alone), so every
// call gets the answer the Python path gives.
//
// A fused plan's forward takes the bias into its epilogue (the bias role: k elements of the plan's type, or none for
// an activation alone), and its activation: ReLU, whose backward masks dy by y first, or GELU, forward only. Its
// backward then also gives the bias's gradient, one sum of dy over every dimension but the channels.
//
// Backward runs on the stream of its forward (PyTorch runs each backward op on its forward op's stream), which
// the forward keeps in the autograd context.
//
// A module's armed call (``hot``): the key its last call through Python took the C++ path with (x's and w's sizes,
// strides, data type and device, the bias, TF32 and determinism, autocast and its type, the plan's pinned stream),
// checked here, so a repeat skips the Python key (under autocast x, w and the bias are cast here as the Python path
// casts them; a 1-D module's plan runs the H = 1 views); anything else (another key, another device or stream, a
// generation bumped by a plan made, remade or forgotten in Python) answers None and the caller takes its Python path,
// which arms the module again.
//
// The custom ops' CUDA kernels (``register_ops``): miofind::conv_forward, conv_backward_data and conv_backward_weight
// as torch.compile's graphs call them (mode="default" launches each from the host). A call whose key (direction,
// device, stream, both inputs' sizes, strides and type, the shape argument, the convolution's parameters, TF32 and
// determinism) a Python call learned (``op_learn``: a one-direction plan of the Entry it ran) launches its recipe
// here; anything else (a key not learned, capture, a misaligned pointer, the table cleared by a deferred solution or
// by CUDA-graph trees) calls the ops' Python implementation, which answers and may learn the key.
//
// Their autograd kernels (AutogradCUDA, AutogradMeta): a call that records nothing for autograd (grad mode off, as in
// a compiled graph, or no input that requires grad) redispatches below autograd here, where custom_op's Python
// autograd kernel would do the same from Python; the rest goes to that Python kernel.
#include <torch/extension.h>
#include <torch/csrc/autograd/custom_function.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/library.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <tuple>
#include <vector>

namespace py = pybind11;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using u64 = uint64_t;

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);
typedef int (*capturing_fn)(void *, int *);     // cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *)
// a library call of a traced recipe (cublasLtMatmul): a C function of 64-bit integer and pointer arguments that
// returns 0 on success (the SysV x86-64 ABI passes them in order, unused trailing ones are ignored)
typedef int (*call_fn)(u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64);
// cuTensorMapEncodeTiled(map, dtype, rank, address, dims, strides, box, element strides, interleave, swizzle,
// L2 promotion, OOB fill) and cuTensorMapEncodeIm2col(map, dtype, rank, address, dims, strides, lower corner,
// upper corner, channels per pixel, pixels per column, element strides, interleave, swizzle, L2 promotion, OOB fill)
typedef int (*encode_tiled_fn)(void *, int, unsigned, void *, const u64 *, const u64 *, const unsigned *,
                               const unsigned *, int, int, int, int);
typedef int (*encode_im2col_fn)(void *, int, unsigned, void *, const u64 *, const u64 *, const int *, const int *,
                                unsigned, unsigned, const unsigned *, int, int, int, int);

// cuLaunchKernelEx(config, func, params, extra) with CUlaunchConfig / CUlaunchAttribute in cuda.h's layout
struct LaunchAttribute {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int i;
    } value;
};
struct LaunchConfig {
    unsigned grid[3], block[3], smem;
    void *stream;
    LaunchAttribute *attrs;
    unsigned nattrs;
};
static_assert(sizeof(LaunchAttribute) == 72 && sizeof(LaunchConfig) == 56, "cuda.h's launch config layout");
typedef int (*launch_ex_fn)(const LaunchConfig *, void *, void **, void **);

static launch_fn g_launch = nullptr;
static launch_ex_fn g_launch_ex = nullptr;      // null: a kind-3 launch goes as a plain one
static capturing_fn g_capturing = nullptr;
static encode_tiled_fn g_encode_tiled = nullptr;
static encode_im2col_fn g_encode_im2col = nullptr;

static const int MAX_PARAMS = 128;
static const int MAX_MAPS = 16;                 // tensor maps of one direction's launches (_fast.py's MAX_MAPS)
static const int MAX_CALL_ARGS = 16;            // a library call's arguments (_fast.py's MAX_CALL_ARGS)

// A failure whose message carries a number: a RuntimeError in Python through std::runtime_error. TORCH_CHECK with
// more than a literal message builds it through c10::str and crashed the process on the device's PyTorch
// (session-bridge/call6: the refusal tests of a library call's arguments, a pointer-slot map, 17 maps).
[[noreturn]] static void fail(const char *fmt, long long v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, fmt, v);
    throw std::runtime_error(buf);
}
static const int MAX_CELLS = 512;               // a library kernel's parameter buffer, 8-byte cells (_fast.py's)
static const size_t MAP_CACHE_LIMIT = 64;       // maps kept per spec (pointers), as miofind.tma.MapCache

struct alignas(64) TensorMap {                  // CUtensorMap: 128 opaque bytes
    u64 opaque[16];
};

// One tensor map without its address (miofind.tma's TiledSpec / Im2colSpec ``fields``) and its encoded maps by
// address. A training loop's caching allocator hands the same addresses back step after step.
struct MapSpec {
    int kind = 0;                       // 0 tiled, 1 im2col
    int dtype = 0, swizzle = 0, l2 = 0;
    unsigned rank = 0, channels = 0, pixels = 0;
    std::vector<u64> dims, strides;
    std::vector<unsigned> box, estr;
    std::vector<int> lower, upper;
    std::mutex mu;
    std::unordered_map<u64, TensorMap> maps;

    // the map of ``address`` into ``out``; false where the driver refuses it (the caller takes the fallback,
    // whose own encode reports why)
    bool get(u64 address, TensorMap &out) {
        std::lock_guard<std::mutex> g(mu);
        auto it = maps.find(address);
        if (it != maps.end()) {
            out = it->second;
            return true;
        }
        TensorMap m;
        void *a = reinterpret_cast<void *>(address);
        int rc = kind == 0
            ? (g_encode_tiled ? g_encode_tiled(&m, dtype, rank, a, dims.data(), strides.data(), box.data(),
                                               estr.data(), 0, swizzle, l2, 0) : -1)
            : (g_encode_im2col ? g_encode_im2col(&m, dtype, rank, a, dims.data(), strides.data(), lower.data(),
                                                 upper.data(), channels, pixels, estr.data(), 0, swizzle, l2, 0) : -1);
        if (rc != 0) return false;
        if (maps.size() >= MAP_CACHE_LIMIT) maps.clear();
        maps.emplace(address, m);
        out = m;
        return true;
    }
};
static std::atomic<bool> g_enabled{true};

struct Kernel {
    int kind = 0;                       // 0 a kernel launch, 1 a library call (func a call_fn; dims and smem unused),
                                        // 2 a library's kernel launched from one parameter buffer of nbytes
    size_t nbytes = 0;
    void *func = nullptr;
    unsigned dims[6] = {1, 1, 1, 1, 1, 1};
    unsigned smem = 0;
    std::vector<u64> vals;              // each parameter's bytes, little-endian in an 8-byte cell
    std::vector<int> slot_param;        // the parameters that take pointers
    std::vector<int> slot_role;         // 0 a, 1 b, 2 out, 3 workspace, 4 bias (a fused forward's; 0 for none)
    std::vector<int64_t> slot_off;      // byte offset added to the role's pointer
    std::vector<int> map_param, map_role, map_spec;     // the parameters that take tensor maps: whose, which spec
    std::vector<int64_t> map_off;
};

struct Recipe {
    std::vector<Kernel> kernels;
    std::vector<std::shared_ptr<MapSpec>> specs;
    int64_t ws_bytes = 0;
    bool swap = false;                  // the solution takes (b, a): a transposed W problem
    int64_t align[4] = {1, 1, 1, 1};    // what a, b, out and workspace must be a multiple of, else the fallback
    int64_t stream = -1;                // >= 0: the only stream it runs on (its library calls carry that stream)
    bool present = false;
};

struct FastPlan {
    Recipe dir[3];                      // F, B, W
    std::vector<int64_t> shape[3], strides[3];  // y, dx, dw as torch tensors
    at::ScalarType dtype;
    int64_t device;
    at::MemoryFormat fmt;
    bool fused = false;                 // the forward takes the bias (its epilogue's, or its fallback's)
    int act = 0;                        // the forward's activation: 0 none, 1 ReLU, 2 GELU (no backward)
    PyObject *fwd_fallback;             // fwd(x, wc, bias or None) -> y
    PyObject *bwd_fallback;             // bwd(dy, x, wc, need_dx, need_dw) -> (dx, dw)
    std::atomic<int64_t> fast_calls{0}, fallback_calls{0};
};

// every plan ever made stays alive for the process (an autograd graph may outlive the Python plan); the Python
// fallbacks are kept with it, which keeps the kernels' modules loaded
static std::mutex g_plans_mutex;
static std::vector<std::shared_ptr<FastPlan>> g_plans;

static std::mutex g_ws_mutex;
static std::map<std::pair<int64_t, int64_t>, at::Tensor> g_ws;
static const int64_t KEEP_WORKSPACE_BYTES = 64ll << 20;

// the current stream of CUDA device ``dev`` as a raw handle; false (stream not set) where dev is not the current one
static bool current_stream(int64_t dev, int64_t &stream) {
    c10::impl::VirtualGuardImpl guard{c10::DeviceType::CUDA};
    if (guard.getDevice().index() != dev) return false;
    stream = reinterpret_cast<int64_t>(
        guard.getStream(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(dev))).native_handle());
    return true;
}

static bool capturing(int64_t stream) {
    if (!g_capturing) return true;      // unknown: take the Python path, which knows
    int status = 0;
    if (g_capturing(reinterpret_cast<void *>(stream), &status) != 0) return true;
    return status != 0;
}

// the workspace of a launch on ``stream``: the kept buffer of (dev, stream), grown as needed, or one above
// KEEP_WORKSPACE_BYTES made for this launch alone (the caller's reference holds it until the launches are queued)
static at::Tensor workspace(int64_t nbytes, int64_t dev, int64_t stream) {
    if (nbytes > KEEP_WORKSPACE_BYTES)
        return at::empty({nbytes}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, dev));
    std::lock_guard<std::mutex> g(g_ws_mutex);
    auto &t = g_ws[{dev, stream}];
    if (!t.defined() || t.numel() < nbytes)
        t = at::empty({nbytes}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, dev));
    return t;
}

// Launch one direction's recipe on (a, b) (and the bias: a fused forward's, else undefined) into a new output of plan
// shape i; false (nothing launched) where an address is misaligned, so the caller takes the fallback. Throws on a
// failed launch.
static bool run(const FastPlan &P, int i, const at::Tensor &a, const at::Tensor &b, int64_t stream, at::Tensor &out,
                const at::Tensor &bias = at::Tensor()) {
    const Recipe &R = P.dir[i];
    if (R.stream >= 0 && R.stream != stream) return false;
    u64 ptr[5];
    ptr[4] = bias.defined() ? reinterpret_cast<u64>(bias.data_ptr()) : 0;
    ptr[0] = reinterpret_cast<u64>(a.data_ptr());
    ptr[1] = reinterpret_cast<u64>(b.data_ptr());
    if (R.swap) std::swap(ptr[0], ptr[1]);
    if (ptr[0] % R.align[0] || ptr[1] % R.align[1]) return false;
    out = at::empty_strided(P.shape[i], P.strides[i], at::TensorOptions().dtype(P.dtype).device(at::kCUDA, P.device));
    ptr[2] = reinterpret_cast<u64>(out.data_ptr());
    at::Tensor ws;
    ptr[3] = 0;
    if (R.ws_bytes > 0) {
        ws = workspace(R.ws_bytes, P.device, stream);
        ptr[3] = reinterpret_cast<u64>(ws.data_ptr());
    }
    if (ptr[2] % R.align[2] || ptr[3] % R.align[3]) return false;
    TensorMap maps[MAX_MAPS];           // every map before any launch: a refused one leaves nothing half done
    int nm = 0;
    for (const Kernel &K : R.kernels)
        for (size_t j = 0; j < K.map_param.size(); j++)
            if (!R.specs[K.map_spec[j]]->get(ptr[K.map_role[j]] + static_cast<u64>(K.map_off[j]), maps[nm++]))
                return false;
    alignas(64) u64 vals[MAX_CELLS];
    void *params[MAX_PARAMS];
    nm = 0;
    for (const Kernel &K : R.kernels) {
        const size_t np = K.vals.size();
        std::copy(K.vals.begin(), K.vals.end(), vals);
        for (size_t j = 0; j < K.slot_param.size(); j++)
            vals[K.slot_param[j]] = ptr[K.slot_role[j]] + static_cast<u64>(K.slot_off[j]);
        if (K.kind == 1) {
            for (size_t j = np; j < static_cast<size_t>(MAX_CALL_ARGS); j++) vals[j] = 0;
            int rc = reinterpret_cast<call_fn>(K.func)(vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6],
                                                       vals[7], vals[8], vals[9], vals[10], vals[11], vals[12],
                                                       vals[13], vals[14], vals[15]);
            if (rc != 0) fail("miofind.torch: a library call of a traced recipe failed with status %lld", rc);
            continue;
        }
        if (K.kind == 2) {
            size_t nb = K.nbytes;
            // CU_LAUNCH_PARAM_BUFFER_POINTER, the buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, its size, CU_LAUNCH_PARAM_END
            void *extra[5] = {reinterpret_cast<void *>(1), vals, reinterpret_cast<void *>(2), &nb, nullptr};
            int rc = g_launch(K.func, K.dims[0], K.dims[1], K.dims[2], K.dims[3], K.dims[4], K.dims[5], K.smem,
                              reinterpret_cast<void *>(stream), nullptr, extra);
            if (rc != 0) fail("miofind.torch: cuLaunchKernel of a library's kernel failed with CUresult %lld", rc);
            continue;
        }
        for (size_t j = 0; j < np; j++) params[j] = &vals[j];
        for (size_t j = 0; j < K.map_param.size(); j++) params[K.map_param[j]] = &maps[nm++];
        int rc;
        if (K.kind == 3 && g_launch_ex) {       // the programmatic dependent of the launch before it
            LaunchAttribute attr{};
            attr.id = 6;                        // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attr.value.i = 1;
            LaunchConfig cfg{{K.dims[0], K.dims[1], K.dims[2]}, {K.dims[3], K.dims[4], K.dims[5]}, K.smem,
                             reinterpret_cast<void *>(stream), &attr, 1};
            rc = g_launch_ex(&cfg, K.func, params, nullptr);
        } else {
            rc = g_launch(K.func, K.dims[0], K.dims[1], K.dims[2], K.dims[3], K.dims[4], K.dims[5], K.smem,
                          reinterpret_cast<void *>(stream), params, nullptr);
        }
        if (rc != 0) fail("miofind.torch: cuLaunchKernel failed with CUresult %lld", rc);
    }
    return true;
}

static FastPlan &plan_of(int64_t id) {
    std::lock_guard<std::mutex> g(g_plans_mutex);
    if (id < 0 || id >= static_cast<int64_t>(g_plans.size())) fail("miofind.torch: no fast plan %lld", id);
    return *g_plans[id];
}

// bias: a fused plan's (k elements of its type, dense, on its device: the callers check), else undefined
static at::Tensor forward_impl(FastPlan &P, const at::Tensor &x, const at::Tensor &wc, const at::Tensor &bias,
                               int64_t stream) {
    at::Tensor y;
    if (g_launch && P.dir[0].present && g_enabled.load(std::memory_order_relaxed) && !capturing(stream) &&
        run(P, 0, x, wc, stream, y, bias)) {
        P.fast_calls.fetch_add(1, std::memory_order_relaxed);
        return y;
    }
    P.fallback_calls.fetch_add(1, std::memory_order_relaxed);
    py::gil_scoped_acquire gil;
    py::object b = bias.defined() ? py::cast(bias) : py::none();
    py::object r = py::reinterpret_borrow<py::object>(P.fwd_fallback)(x, wc, b);
    return r.cast<at::Tensor>();
}

// whether ``bias`` is one a fused plan's epilogue reads: k elements of the plan's type, dense, on its device
static bool fusable_bias(const FastPlan &P, const at::Tensor &bias) {
    return bias.dim() == 1 && bias.size(0) == P.shape[0][1] && bias.scalar_type() == P.dtype && bias.is_cuda() &&
           bias.get_device() == P.device && bias.is_contiguous();
}

// the bias a Python caller gives plan P (``apply``, ``forward``): a fused plan's, checked (``fusable_bias``), else none
static at::Tensor bias_of(const FastPlan &P, const c10::optional<at::Tensor> &bias) {
    at::Tensor b = bias.has_value() ? *bias : at::Tensor();
    if (P.fused != b.defined() || (b.defined() && !fusable_bias(P, b)))
        throw std::runtime_error("miofind.torch: a fused plan takes its bias (k elements of its type, dense, on its "
                                 "device), any other plan none");
    return b;
}

// The autograd node's two halves, shared by FastConv (a plan without a fused bias) and FastConvBias (a fused plan's:
// an undefined tensor cannot be an input of a C++ autograd Function, so the bias is an input of its own Function).
// Inputs: x, w (the parameter), wc (w in the computing type: w itself, or its cast made outside autograd, whose
// gradient goes back to w's type), [the bias,] plan id, stream.
static at::Tensor conv_forward(AutogradContext *ctx, const at::Tensor &x, const at::Tensor &w, const at::Tensor &wc,
                               const at::Tensor &bias, int64_t id, int64_t stream) {
    FastPlan &P = plan_of(id);
    if (P.act == 2) throw std::runtime_error("miofind.torch: a GELU epilogue has no backward (a plan without "
                                             "autograd only)");
    at::Tensor y = forward_impl(P, x, wc, bias, stream);
    bool need_dx = ctx->needs_input_grad(0), need_dw = ctx->needs_input_grad(1);
    // ReLU's mask is y's sign: y is kept for the backward
    ctx->save_for_backward({need_dw ? x : at::Tensor(), need_dx ? wc : at::Tensor(), P.act == 1 ? y : at::Tensor()});
    ctx->saved_data["id"] = id;
    ctx->saved_data["stream"] = stream;
    ctx->saved_data["cast"] = wc.scalar_type() != w.scalar_type();
    ctx->saved_data["wtype"] = static_cast<int64_t>(w.scalar_type());
    return y;
}

// (dx, dw, db): db where ``need_db`` (a fused bias's gradient, one sum of dy over all but the channels)
static std::tuple<at::Tensor, at::Tensor, at::Tensor> conv_backward(AutogradContext *ctx, at::Tensor dy, bool need_db) {
    auto saved = ctx->get_saved_variables();
    at::Tensor x = saved[0], wc = saved[1];
    bool need_dx = ctx->needs_input_grad(0), need_dw = ctx->needs_input_grad(1);
    FastPlan &P = plan_of(ctx->saved_data["id"].toInt());
    if (P.act == 1 && dy.defined()) dy = at::threshold_backward(dy, saved[2], 0);     // PyTorch's ReLU backward
    at::Tensor db;
    if (need_db && dy.defined()) {
        std::vector<int64_t> dims{0};
        for (int64_t d = 2; d < dy.dim(); d++) dims.push_back(d);
        db = dy.sum(dims);
    }
    int64_t stream = ctx->saved_data["stream"].toInt();
    at::Tensor dx, dw;
    // each of dx and dw from C++ where its direction has a recipe, the rest through the Python fallback
    bool fdx = false, fdw = false;
    if (g_launch && dy.defined() && g_enabled.load(std::memory_order_relaxed) &&
        ((need_dx && P.dir[1].present) || (need_dw && P.dir[2].present)) && dy.scalar_type() == P.dtype &&
        dy.sizes().equals(P.shape[0]) && !capturing(stream)) {
        at::Tensor d = dy.is_contiguous(P.fmt) ? dy : dy.contiguous(P.fmt);
        fdx = need_dx && P.dir[1].present && run(P, 1, d, wc, stream, dx);
        fdw = need_dw && P.dir[2].present && run(P, 2, d, x, stream, dw);
    }
    if (fdx || fdw) P.fast_calls.fetch_add(1, std::memory_order_relaxed);
    const bool rest_dx = need_dx && !fdx, rest_dw = need_dw && !fdw;
    if ((rest_dx || rest_dw) && dy.defined()) {
        P.fallback_calls.fetch_add(1, std::memory_order_relaxed);
        py::gil_scoped_acquire gil;
        py::tuple r = py::reinterpret_borrow<py::object>(P.bwd_fallback)(dy, x, wc, rest_dx, rest_dw);
        if (rest_dx) dx = r[0].is_none() ? at::Tensor() : r[0].cast<at::Tensor>();
        if (rest_dw) dw = r[1].is_none() ? at::Tensor() : r[1].cast<at::Tensor>();
    }
    if (dw.defined() && ctx->saved_data["cast"].toBool())
        dw = dw.to(static_cast<at::ScalarType>(ctx->saved_data["wtype"].toInt()));
    return {dx, dw, db};
}

struct FastConv : public torch::autograd::Function<FastConv> {
    static at::Tensor forward(AutogradContext *ctx, at::Tensor x, at::Tensor w, at::Tensor wc, int64_t id,
                              int64_t stream) {
        return conv_forward(ctx, x, w, wc, at::Tensor(), id, stream);
    }

    static variable_list backward(AutogradContext *ctx, variable_list grads) {
        auto g = conv_backward(ctx, grads[0], false);
        return {std::get<0>(g), std::get<1>(g), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

struct FastConvBias : public torch::autograd::Function<FastConvBias> {
    static at::Tensor forward(AutogradContext *ctx, at::Tensor x, at::Tensor w, at::Tensor wc, at::Tensor bias,
                              int64_t id, int64_t stream) {
        return conv_forward(ctx, x, w, wc, bias, id, stream);
    }

    static variable_list backward(AutogradContext *ctx, variable_list grads) {
        auto g = conv_backward(ctx, grads[0], ctx->needs_input_grad(3));
        return {std::get<0>(g), std::get<1>(g), at::Tensor(), std::get<2>(g), at::Tensor(), at::Tensor()};
    }
};

// y = act(conv(x, w) [+ bias]) of plan ``id`` recorded for autograd (bias: a fused plan's, else undefined)
static at::Tensor conv_apply(const at::Tensor &x, const at::Tensor &w, const at::Tensor &wc, const at::Tensor &bias,
                             int64_t id, int64_t stream) {
    return bias.defined() ? FastConvBias::apply(x, w, wc, bias, id, stream) : FastConv::apply(x, w, wc, id, stream);
}

// -- armed module calls ------------------------------------------------------------------------------------------

struct Hot {
    int64_t id = -1, dev = 0, pinned = -1;      // pinned: the stream the plan runs on alone, -1 any
    uint64_t token = 0, gen = 0;                // token: the arming module's; gen: g_gen when armed
    std::vector<int64_t> xs, xst, ws, wst, bshape;
    at::ScalarType dtype = at::kFloat;          // the computing type (x's, the plan's)
    at::ScalarType wdtype = at::kFloat;         // w's own (another under autocast: w is cast to dtype per call)
    bool tf32 = false, det = false, bias = false;
    bool fused = false;                         // the plan's forward takes the bias (its epilogue's)
    bool autocast = false;                      // armed under autocast (to dtype): x and the bias cast per call
    at::ScalarType xdtype = at::kFloat;         // x's own (another under autocast: cast to dtype per call)
    bool view1d = false;                        // a 1-D module: its plan runs the H = 1 views of x and w
    // w's cast without autograd, kept while w is the same tensor (held: its address cannot be reused), at the same
    // version and address, as functional._cast_param keeps it
    mutable std::mutex cast_mu;
    mutable at::Tensor cast_of, cast;
    mutable int64_t cast_version = -1;
    mutable const void *cast_ptr = nullptr;
};
// the floating types autocast casts (PyTorch's is_eligible; float64 stays)
static bool autocast_from(at::ScalarType t) {
    return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

static std::mutex g_hot_mutex;
static std::vector<std::shared_ptr<const Hot>> g_hots;
static std::vector<int64_t> g_free_hots;       // slots of modules that were collected, for the next new_hot
static std::atomic<uint64_t> g_gen{1};
static const size_t MAX_HOTS = 1 << 16;

static int64_t new_hot() {
    std::lock_guard<std::mutex> g(g_hot_mutex);
    if (!g_free_hots.empty()) {
        int64_t slot = g_free_hots.back();
        g_free_hots.pop_back();
        return slot;
    }
    if (g_hots.size() >= MAX_HOTS) return -1;
    g_hots.emplace_back();
    return static_cast<int64_t>(g_hots.size()) - 1;
}

// the slot of a collected module: its armed call (and the weight and cast it holds) released, the slot reused
static void free_hot(int64_t slot) {
    std::shared_ptr<const Hot> old;
    std::lock_guard<std::mutex> g(g_hot_mutex);
    if (slot < 0 || slot >= static_cast<int64_t>(g_hots.size())) return;
    old.swap(g_hots[slot]);
    g_free_hots.push_back(slot);
}

static void arm(int64_t slot, uint64_t token, uint64_t gen, int64_t id, std::vector<int64_t> xs,
                std::vector<int64_t> xst, std::vector<int64_t> ws, std::vector<int64_t> wst, at::ScalarType dtype,
                int64_t dev, bool tf32, bool det, bool bias, std::vector<int64_t> bshape, int64_t pinned,
                bool autocast, at::ScalarType wdtype, bool view1d, at::ScalarType xdtype) {
    const bool fused = plan_of(id).fused;       // an unknown plan fails here, not at a call
    if (fused && !bias) throw std::runtime_error("miofind.torch: a fused plan is armed with its bias");
    auto H = std::make_shared<Hot>();
    H->id = id, H->dev = dev, H->pinned = pinned, H->token = token, H->gen = gen;
    H->xs = std::move(xs), H->xst = std::move(xst), H->ws = std::move(ws), H->wst = std::move(wst);
    H->bshape = std::move(bshape);
    H->dtype = dtype, H->tf32 = tf32, H->det = det, H->bias = bias, H->fused = fused;
    H->autocast = autocast, H->wdtype = wdtype, H->view1d = view1d, H->xdtype = autocast ? xdtype : dtype;
    std::lock_guard<std::mutex> g(g_hot_mutex);
    if (slot < 0 || slot >= static_cast<int64_t>(g_hots.size())) fail("miofind.torch: no hot slot %lld", slot);
    g_hots[slot] = std::move(H);
}

// y of the armed call, or None where anything differs from the armed key (the caller takes its Python path)
static py::object hot(int64_t slot, uint64_t token, const at::Tensor &x, const at::Tensor &w,
                      const c10::optional<at::Tensor> &bias, bool tf32, bool det) {
    std::shared_ptr<const Hot> H;
    {
        std::lock_guard<std::mutex> g(g_hot_mutex);
        if (slot >= 0 && slot < static_cast<int64_t>(g_hots.size())) H = g_hots[slot];
    }
    if (!H || H->token != token || H->gen != g_gen.load(std::memory_order_acquire)) return py::none();
    if (!x.defined() || !w.defined() || !x.is_cuda() || !w.is_cuda() || x.get_device() != H->dev ||
        w.get_device() != H->dev || x.scalar_type() != H->xdtype || w.scalar_type() != H->wdtype)
        return py::none();
    if (!x.sizes().equals(H->xs) || !x.strides().equals(H->xst) || !w.sizes().equals(H->ws) ||
        !w.strides().equals(H->wst) || tf32 != H->tf32 || det != H->det)
        return py::none();
    const bool b = bias.has_value() && bias->defined();
    // under autocast the bias is cast as functional._autocast casts it (autocast's types only), so "of x's type"
    // is after that cast
    const bool bcast = b && H->autocast && bias->scalar_type() != H->dtype && autocast_from(bias->scalar_type());
    if ((b && (bcast || bias->scalar_type() == H->dtype)) != H->bias) return py::none();
    if (at::autocast::is_autocast_enabled(at::kCUDA) != H->autocast ||
        (H->autocast && at::autocast::get_autocast_dtype(at::kCUDA) != H->dtype))
        return py::none();
    int64_t stream = 0;
    if (!current_stream(H->dev, stream)) return py::none();
    if (H->pinned >= 0 && H->pinned != stream) return py::none();
    const bool grad = at::GradMode::is_enabled() &&
        (x.requires_grad() || w.requires_grad() || (b && bias->requires_grad()));
    // w in the computing type (wc) and the w autograd sees (wp), as functional.conv_normalized casts them under
    // autocast: a weight that needs its gradient is cast outside autograd (FastConv casts dw back); with autograd on
    // otherwise, a fresh cast; without it, the kept cast
    at::Tensor wc = w, wp = w;
    if (w.scalar_type() != H->dtype) {
        if (grad && w.requires_grad()) {
            wc = w.detach().to(H->dtype);
        } else if (at::GradMode::is_enabled() || !w.is_leaf()) {
            wc = wp = w.to(H->dtype);
        } else {
            std::lock_guard<std::mutex> g(H->cast_mu);
            if (!H->cast.defined() || !H->cast_of.is_same(w) || H->cast_version != w._version() ||
                H->cast_ptr != w.data_ptr()) {
                H->cast = w.to(H->dtype);
                H->cast_of = w, H->cast_version = w._version(), H->cast_ptr = w.data_ptr();
            }
            wc = wp = H->cast;
        }
        if (!wc.strides().equals(H->wst)) return py::none();
    }
    if (H->view1d) {
        const bool same = wp.is_same(wc);
        wc = wc.unsqueeze(2);
        wp = same ? wc : wp.unsqueeze(2);
    }
    at::Tensor bv = b ? (bcast ? bias->to(H->dtype) : *bias) : at::Tensor();
    FastPlan &P = plan_of(H->id);
    if (H->fused && !fusable_bias(P, bv)) return py::none();    // the Python path makes it dense (or refuses it)
    at::Tensor xv = x.scalar_type() != H->dtype ? x.to(H->dtype) : x;     // autocast's cast (strides kept)
    if (H->view1d) xv = xv.unsqueeze(2);
    at::Tensor fb = H->fused ? bv : at::Tensor();
    at::Tensor y = grad ? conv_apply(xv, wp, wc, fb, H->id, stream) : forward_impl(P, xv, wc, fb, stream);
    if (b && !H->fused) y.add_(bv.view(H->bshape));
    return py::cast(H->view1d ? y.squeeze(2) : y);
}

static std::shared_ptr<MapSpec> make_spec(py::handle h) {
    // miofind.tma's ``fields``: (kind, dtype, rank, dims, strides, box, lower, upper, channels, pixels,
    // element strides, swizzle, L2 promotion)
    py::tuple t = h.cast<py::tuple>();
    TORCH_CHECK(t.size() == 13, "recipe map: expected the 13 encode fields of miofind.tma");
    auto S = std::make_shared<MapSpec>();
    S->kind = t[0].cast<int>();
    S->dtype = t[1].cast<int>();
    S->rank = t[2].cast<unsigned>();
    S->dims = t[3].cast<std::vector<u64>>();
    S->strides = t[4].cast<std::vector<u64>>();
    S->box = t[5].cast<std::vector<unsigned>>();
    S->lower = t[6].cast<std::vector<int>>();
    S->upper = t[7].cast<std::vector<int>>();
    S->channels = t[8].cast<unsigned>();
    S->pixels = t[9].cast<unsigned>();
    S->estr = t[10].cast<std::vector<unsigned>>();
    S->swizzle = t[11].cast<int>();
    S->l2 = t[12].cast<int>();
    TORCH_CHECK(S->kind == 0 || S->kind == 1, "recipe map: kind must be 0 (tiled) or 1 (im2col)");
    TORCH_CHECK(S->rank >= 1 && S->rank <= 5 && S->dims.size() == S->rank && S->strides.size() + 1 == S->rank &&
                S->estr.size() == S->rank, "recipe map: dims, strides and element strides must match the rank");
    if (S->kind == 0) {
        TORCH_CHECK(S->box.size() == S->rank, "recipe map: a tiled map's box takes one size per dimension");
    } else {
        TORCH_CHECK(S->lower.size() + 2 == S->rank && S->upper.size() + 2 == S->rank,
                    "recipe map: an im2col map's corners take rank - 2 values");
    }
    return S;
}

static Recipe make_recipe(py::object spec) {
    // spec: None, or (kernels, ws_bytes, swap, align[4], map specs, stream: -1 any); each kernel (func, grid[3],
    // block[3], smem, values, slot params, slot roles, slot offsets, maps: [(param, role, offset, spec index)],
    // kind: 0 a launch, 1 a library call, 2 a buffer launch, 3 a launch as the programmatic dependent of the one
    // before)
    Recipe R;
    if (spec.is_none()) return R;
    py::tuple t = spec.cast<py::tuple>();
    TORCH_CHECK(t.size() == 6, "recipe: expected (kernels, ws_bytes, swap, align, map specs, stream)");
    for (py::handle h : t[4].cast<py::list>()) R.specs.push_back(make_spec(h));
    size_t nmaps = 0;
    for (py::handle kh : t[0].cast<py::list>()) {
        py::tuple k = kh.cast<py::tuple>();
        TORCH_CHECK(k.size() == 10 || k.size() == 11, "recipe kernel: expected 10 or 11 fields");
        Kernel K;
        K.kind = k[9].cast<int>();
        TORCH_CHECK(K.kind >= 0 && K.kind <= 3, "recipe kernel: kind must be 0 (launch), 1 (library call), 2 "
                    "(buffer launch) or 3 (a launch as the programmatic dependent of the one before)");
        if (k.size() == 11) K.nbytes = k[10].cast<size_t>();
        K.func = reinterpret_cast<void *>(k[0].cast<u64>());
        auto grid = k[1].cast<std::vector<int64_t>>(), block = k[2].cast<std::vector<int64_t>>();
        TORCH_CHECK(grid.size() == 3 && block.size() == 3, "recipe kernel: grid and block take 3 dimensions");
        for (int i = 0; i < 3; i++) {
            TORCH_CHECK(grid[i] >= 1 && grid[i] <= 0xffffffffll && block[i] >= 1 && block[i] <= 1024,
                        "recipe kernel: bad launch dimensions");
            K.dims[i] = static_cast<unsigned>(grid[i]);
            K.dims[3 + i] = static_cast<unsigned>(block[i]);
        }
        K.smem = k[3].cast<unsigned>();
        K.vals = k[4].cast<std::vector<u64>>();
        K.slot_param = k[5].cast<std::vector<int>>();
        K.slot_role = k[6].cast<std::vector<int>>();
        K.slot_off = k[7].cast<std::vector<int64_t>>();
        TORCH_CHECK(K.func != nullptr, "recipe kernel: null function");
        if (K.kind == 1 && K.vals.size() > static_cast<size_t>(MAX_CALL_ARGS))
            fail("recipe kernel: a library call takes at most %lld arguments", MAX_CALL_ARGS);
        TORCH_CHECK(K.kind != 2 || (K.nbytes <= 8 * K.vals.size() && K.nbytes + 8 > 8 * K.vals.size()),
                    "recipe kernel: a buffer launch's nbytes does not fit its cells");
        TORCH_CHECK(K.vals.size() <= static_cast<size_t>(K.kind == 2 ? MAX_CELLS : MAX_PARAMS) &&
                    K.slot_param.size() == K.slot_role.size() &&
                    K.slot_param.size() == K.slot_off.size(), "recipe kernel: inconsistent argument slots");
        for (size_t j = 0; j < K.slot_param.size(); j++)
            TORCH_CHECK(K.slot_param[j] >= 0 && static_cast<size_t>(K.slot_param[j]) < K.vals.size() &&
                        K.slot_role[j] >= 0 && K.slot_role[j] < 5, "recipe kernel: slot out of range");
        for (py::handle mh : k[8].cast<py::list>()) {
            py::tuple m = mh.cast<py::tuple>();
            TORCH_CHECK(m.size() == 4, "recipe kernel map: expected (param, role, offset, spec)");
            int param = m[0].cast<int>(), role = m[1].cast<int>(), sp = m[3].cast<int>();
            TORCH_CHECK(param >= 0 && static_cast<size_t>(param) < K.vals.size() && role >= 0 && role < 4 &&
                        sp >= 0 && static_cast<size_t>(sp) < R.specs.size(), "recipe kernel map: out of range");
            for (int q : K.slot_param)
                if (q == param) fail("recipe kernel map: parameter %lld is also a pointer slot", param);
            K.map_param.push_back(param);
            K.map_role.push_back(role);
            K.map_off.push_back(m[2].cast<int64_t>());
            K.map_spec.push_back(sp);
        }
        TORCH_CHECK(K.kind == 0 || K.kind == 3 || K.map_param.empty(),
                    "recipe kernel: only a kernel launch of its own (kind 0 or 3) takes tensor maps");
        nmaps += K.map_param.size();
        R.kernels.push_back(std::move(K));
    }
    TORCH_CHECK(!R.kernels.empty(), "recipe: no kernels");
    if (nmaps > static_cast<size_t>(MAX_MAPS)) fail("recipe: more than %lld tensor maps", MAX_MAPS);
    R.ws_bytes = t[1].cast<int64_t>();
    R.swap = t[2].cast<bool>();
    auto al = t[3].cast<std::vector<int64_t>>();
    TORCH_CHECK(al.size() == 4, "recipe: align takes 4 values (a, b, out, workspace)");
    for (int i = 0; i < 4; i++) {
        TORCH_CHECK(al[i] >= 1, "recipe: align must be positive");
        R.align[i] = al[i];
    }
    R.stream = t[5].cast<int64_t>();
    R.present = true;
    return R;
}

static int64_t new_plan(py::object f, py::object b, py::object w, py::list shapes, py::list strides,
                        at::ScalarType dtype, int64_t device, bool channels_last, py::object fwd, py::object bwd,
                        bool fused, int act) {
    auto P = std::make_shared<FastPlan>();
    TORCH_CHECK(act >= 0 && act <= 2, "new_plan: act must be 0 (none), 1 (ReLU) or 2 (GELU)");
    P->fused = fused;
    P->act = act;
    P->dir[0] = make_recipe(f);
    P->dir[1] = make_recipe(b);
    P->dir[2] = make_recipe(w);
    TORCH_CHECK(shapes.size() == 3 && strides.size() == 3, "new_plan: three shapes and strides (y, dx, dw)");
    for (int i = 0; i < 3; i++) {
        P->shape[i] = shapes[i].cast<std::vector<int64_t>>();
        P->strides[i] = strides[i].cast<std::vector<int64_t>>();
    }
    const size_t nd = P->shape[0].size();
    P->dtype = dtype;
    P->device = device;
    P->fmt = !channels_last ? at::MemoryFormat::Contiguous
                            : nd == 5 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
    P->fwd_fallback = fwd.release().ptr();      // kept for the process, as the plan is
    P->bwd_fallback = bwd.release().ptr();
    std::lock_guard<std::mutex> g(g_plans_mutex);
    g_plans.push_back(P);
    return static_cast<int64_t>(g_plans.size()) - 1;
}

// -- the custom ops' CUDA kernels ----------------------------------------------------------------------------------

struct KeyHash {
    size_t operator()(const std::vector<int64_t> &k) const {
        u64 h = 1469598103934665603ull;     // FNV-1a over the 8-byte cells
        for (int64_t v : k) {
            h ^= static_cast<u64>(v);
            h *= 1099511628211ull;
        }
        return static_cast<size_t>(h);
    }
};

static std::mutex g_ops_mutex;
static std::unordered_map<std::vector<int64_t>, std::shared_ptr<FastPlan>, KeyHash> g_ops;
static std::atomic<bool> g_ops_on{true};
static std::atomic<uint64_t> g_ops_gen{1};          // bumped by every clear: a learn started before it is refused
static std::atomic<int64_t> g_ops_hits{0}, g_ops_misses{0};
static PyObject *g_ops_python = nullptr;            // _ops._op_python(d, a, b, shape, stride, padding, ...)
static const size_t MAX_OPS = 1 << 16;

static void push_all(std::vector<int64_t> &k, c10::IntArrayRef v) {
    k.push_back(static_cast<int64_t>(v.size()));
    k.insert(k.end(), v.begin(), v.end());
}

// The key of an op call (d: 0 F, 1 B, 2 W) on the current stream of a's device; false where the call cannot be keyed
// (not two CUDA tensors on the current device)
static bool op_key(int d, const at::Tensor &a, const at::Tensor &b, c10::IntArrayRef shp, c10::IntArrayRef stride,
                   c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups, std::vector<int64_t> &k,
                   int64_t &stream) {
    if (!a.defined() || !b.defined() || !a.is_cuda() || !b.is_cuda() || a.get_device() != b.get_device())
        return false;
    const int64_t dev = a.get_device();
    if (!current_stream(dev, stream)) return false;
    auto &ctx = at::globalContext();
    const bool tf32 = a.scalar_type() == at::kFloat && ctx.allowTF32CuDNN();
    const bool det = ctx.deterministicAlgorithms() || ctx.deterministicCuDNN();
    k.reserve(64);
    k.push_back(d);
    k.push_back(dev);
    k.push_back(stream);
    k.push_back(static_cast<int64_t>(a.scalar_type()));
    k.push_back(static_cast<int64_t>(b.scalar_type()));
    k.push_back(tf32);
    k.push_back(det);
    push_all(k, a.sizes());
    push_all(k, a.strides());
    push_all(k, b.sizes());
    push_all(k, b.strides());
    push_all(k, shp);
    push_all(k, stride);
    push_all(k, padding);
    push_all(k, dilation);
    k.push_back(groups);
    return true;
}

static py::list as_list(c10::IntArrayRef v) {
    py::list l;
    for (int64_t x : v) l.append(x);
    return l;
}

static at::Tensor op_call(int d, const at::Tensor &a, const at::Tensor &b, c10::IntArrayRef shp,
                          c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                          int64_t groups) {
    if (g_launch && g_ops_on.load(std::memory_order_relaxed) && g_enabled.load(std::memory_order_relaxed)) {
        std::vector<int64_t> k;
        int64_t stream = 0;
        if (op_key(d, a, b, shp, stride, padding, dilation, groups, k, stream)) {
            std::shared_ptr<FastPlan> P;
            {
                std::lock_guard<std::mutex> g(g_ops_mutex);
                auto it = g_ops.find(k);
                if (it != g_ops.end()) P = it->second;
            }
            at::Tensor out;
            if (P && !capturing(stream) && run(*P, d, a, b, stream, out)) {
                P->fast_calls.fetch_add(1, std::memory_order_relaxed);
                g_ops_hits.fetch_add(1, std::memory_order_relaxed);
                return out;
            }
        }
    }
    g_ops_misses.fetch_add(1, std::memory_order_relaxed);
    py::gil_scoped_acquire gil;
    if (!g_ops_python) throw std::runtime_error("miofind.torch: the custom ops' Python path is not registered");
    py::object r = py::reinterpret_borrow<py::object>(g_ops_python)(d, a, b, as_list(shp), as_list(stride),
                                                                     as_list(padding), as_list(dilation), groups);
    return r.cast<at::Tensor>();
}

static std::vector<int64_t> ints(c10::SymIntArrayRef v) {
    std::vector<int64_t> r;
    r.reserve(v.size());
    for (const c10::SymInt &s : v) r.push_back(s.expect_int());
    return r;
}

static at::Tensor op_forward(const at::Tensor &x, const at::Tensor &w, c10::SymIntArrayRef stride,
                             c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, c10::SymInt groups) {
    return op_call(0, x, w, {}, ints(stride), ints(padding), ints(dilation), groups.expect_int());
}

static at::Tensor op_backward_data(const at::Tensor &dy, const at::Tensor &w, c10::SymIntArrayRef x_shape,
                                   c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                                   c10::SymIntArrayRef dilation, c10::SymInt groups) {
    return op_call(1, dy, w, ints(x_shape), ints(stride), ints(padding), ints(dilation), groups.expect_int());
}

static at::Tensor op_backward_weight(const at::Tensor &dy, const at::Tensor &x, c10::SymIntArrayRef w_shape,
                                     c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                                     c10::SymIntArrayRef dilation, c10::SymInt groups) {
    return op_call(2, dy, x, ints(w_shape), ints(stride), ints(padding), ints(dilation), groups.expect_int());
}

// -- the custom ops' autograd kernels ------------------------------------------------------------------------------
//
// custom_op's autograd kernel is Python (registered at the Autograd alias): every op call runs it, even a compiled
// graph's with grad mode off, where all it does is redispatch below autograd. These C++ kernels, at AutogradCUDA and
// AutogradMeta, take that case here (grad mode off, or no input that requires grad: the redispatch custom_op's makes,
// in C++) and hand the rest to custom_op's own autograd kernel (``make_autograd_impl`` of the op, given at
// registration), which records the op for autograd.

static PyObject *g_ops_autograd[3] = {nullptr, nullptr, nullptr};
static std::atomic<bool> g_ag_on{true};
static std::atomic<int64_t> g_ag_below{0}, g_ag_python{0};

using FwdSig = at::Tensor(const at::Tensor &, const at::Tensor &, c10::SymIntArrayRef, c10::SymIntArrayRef,
                          c10::SymIntArrayRef, c10::SymInt);
using BwdSig = at::Tensor(const at::Tensor &, const at::Tensor &, c10::SymIntArrayRef, c10::SymIntArrayRef,
                          c10::SymIntArrayRef, c10::SymIntArrayRef, c10::SymInt);

static bool below_autograd(const at::Tensor &a, const at::Tensor &b) {
    return g_ag_on.load(std::memory_order_relaxed) &&
           !(at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad()));
}

static py::list sym_list(c10::SymIntArrayRef v) {
    py::list l;
    for (const c10::SymInt &s : v) l.append(py::cast(s));
    return l;
}

// custom_op's autograd kernel of op d: autograd_impl(keyset, *args)
static at::Tensor ag_python(int d, c10::DispatchKeySet ks, const at::Tensor &a, const at::Tensor &b,
                            const c10::SymIntArrayRef *shp, c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                            c10::SymIntArrayRef dilation, const c10::SymInt &groups) {
    g_ag_python.fetch_add(1, std::memory_order_relaxed);
    py::gil_scoped_acquire gil;
    py::object f = py::reinterpret_borrow<py::object>(g_ops_autograd[d]);
    py::object r = shp ? f(py::cast(ks), a, b, sym_list(*shp), sym_list(stride), sym_list(padding),
                           sym_list(dilation), py::cast(groups))
                       : f(py::cast(ks), a, b, sym_list(stride), sym_list(padding), sym_list(dilation),
                           py::cast(groups));
    return r.cast<at::Tensor>();
}

static at::Tensor ag_forward(c10::DispatchKeySet ks, const at::Tensor &x, const at::Tensor &w,
                             c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                             c10::SymInt groups) {
    if (!below_autograd(x, w)) return ag_python(0, ks, x, w, nullptr, stride, padding, dilation, groups);
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("miofind::conv_forward", "").typed<FwdSig>();
    g_ag_below.fetch_add(1, std::memory_order_relaxed);
    at::AutoDispatchBelowAutograd guard;
    return op.redispatch(ks & c10::after_autograd_keyset, x, w, stride, padding, dilation, std::move(groups));
}

static at::Tensor ag_backward(int d, c10::DispatchKeySet ks, const at::Tensor &a, const at::Tensor &b,
                              c10::SymIntArrayRef shp, c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                              c10::SymIntArrayRef dilation, c10::SymInt groups) {
    if (!below_autograd(a, b)) return ag_python(d, ks, a, b, &shp, stride, padding, dilation, groups);
    static auto data = c10::Dispatcher::singleton().findSchemaOrThrow("miofind::conv_backward_data", "")
                           .typed<BwdSig>();
    static auto weight = c10::Dispatcher::singleton().findSchemaOrThrow("miofind::conv_backward_weight", "")
                             .typed<BwdSig>();
    g_ag_below.fetch_add(1, std::memory_order_relaxed);
    at::AutoDispatchBelowAutograd guard;
    return (d == 1 ? data : weight).redispatch(ks & c10::after_autograd_keyset, a, b, shp, stride, padding, dilation,
                                               std::move(groups));
}

static at::Tensor ag_backward_data(c10::DispatchKeySet ks, const at::Tensor &dy, const at::Tensor &w,
                                   c10::SymIntArrayRef x_shape, c10::SymIntArrayRef stride,
                                   c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, c10::SymInt groups) {
    return ag_backward(1, ks, dy, w, x_shape, stride, padding, dilation, std::move(groups));
}

static at::Tensor ag_backward_weight(c10::DispatchKeySet ks, const at::Tensor &dy, const at::Tensor &x,
                                     c10::SymIntArrayRef w_shape, c10::SymIntArrayRef stride,
                                     c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, c10::SymInt groups) {
    return ag_backward(2, ks, dy, x, w_shape, stride, padding, dilation, std::move(groups));
}

// Register the three CUDA kernels once per process (the schemas are the Python custom ops'); ``python`` is the ops'
// Python path; ``autograd`` (or None: custom_op's Python autograd kernels stay alone) the three ops' custom_op
// autograd kernels, for the C++ autograd kernels to hand the grad-recording calls to. False where this process
// registered them already (this load, ``ops_registered``, or another load of the extension).
static std::unique_ptr<torch::Library> g_ops_lib;
static std::mutex g_register_mutex;

static bool register_ops(py::object python, py::object autograd) {
    static std::vector<std::unique_ptr<torch::Library>> ag_libs;
    std::lock_guard<std::mutex> g(g_register_mutex);
    auto &lib = g_ops_lib;
    if (lib) return false;
    std::vector<py::object> fns;
    if (!autograd.is_none()) {
        fns = autograd.cast<std::vector<py::object>>();
        if (fns.size() != 3) fail("miofind.torch: register_ops: autograd: 3 kernels, got %lld", (long long)fns.size());
    }
    g_ops_python = python.release().ptr();      // kept for the process, as the registration is
    lib = std::make_unique<torch::Library>(torch::Library::IMPL, "miofind", c10::DispatchKey::CUDA, __FILE__,
                                           __LINE__);
    lib->impl("conv_forward", TORCH_FN(op_forward));
    lib->impl("conv_backward_data", TORCH_FN(op_backward_data));
    lib->impl("conv_backward_weight", TORCH_FN(op_backward_weight));
    if (fns.empty()) return true;
    for (int i = 0; i < 3; ++i) g_ops_autograd[i] = fns[i].release().ptr();
    for (auto key : {c10::DispatchKey::AutogradCUDA, c10::DispatchKey::AutogradMeta}) {
        auto l = std::make_unique<torch::Library>(torch::Library::IMPL, "miofind", key, __FILE__, __LINE__);
        l->impl("conv_forward", TORCH_FN(ag_forward));
        l->impl("conv_backward_data", TORCH_FN(ag_backward_data));
        l->impl("conv_backward_weight", TORCH_FN(ag_backward_weight));
        ag_libs.push_back(std::move(l));
    }
    return true;
}

// Learn the key of this call (as op_call makes it, now) for one-direction plan ``id``, unless the table was cleared
// since generation ``gen`` (the plan may be of a replaced Entry) or the ops are off; whether it was learned.
static bool op_learn(int d, const at::Tensor &a, const at::Tensor &b, std::vector<int64_t> shp,
                     std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation,
                     int64_t groups, int64_t id, uint64_t gen) {
    TORCH_CHECK(d >= 0 && d <= 2, "op_learn: direction 0 (F), 1 (B) or 2 (W)");
    std::shared_ptr<FastPlan> P;
    {
        std::lock_guard<std::mutex> g(g_plans_mutex);
        if (id < 0 || id >= static_cast<int64_t>(g_plans.size())) fail("miofind.torch: no fast plan %lld", id);
        P = g_plans[id];
    }
    if (!P->dir[d].present) fail("miofind.torch: op_learn: plan %lld has no recipe for the call's direction", id);
    std::vector<int64_t> k;
    int64_t stream = 0;
    if (!op_key(d, a, b, shp, stride, padding, dilation, groups, k, stream)) return false;
    std::lock_guard<std::mutex> g(g_ops_mutex);
    if (!g_ops_on.load() || g_ops_gen.load() != gen || g_ops.size() >= MAX_OPS) return false;
    g_ops[k] = P;
    return true;
}

static void ops_clear() {
    std::lock_guard<std::mutex> g(g_ops_mutex);
    g_ops.clear();
    g_ops_gen.fetch_add(1);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "miofind.torch's C++ hot path (see _fast.py)";
    m.def("init", [](u64 launch, u64 is_capturing, u64 encode_tiled, u64 encode_im2col, u64 launch_ex) {
        g_launch = reinterpret_cast<launch_fn>(launch);
        g_capturing = reinterpret_cast<capturing_fn>(is_capturing);
        g_encode_tiled = reinterpret_cast<encode_tiled_fn>(encode_tiled);
        g_encode_im2col = reinterpret_cast<encode_im2col_fn>(encode_im2col);
        g_launch_ex = reinterpret_cast<launch_ex_fn>(launch_ex);
    }, py::arg("launch"), py::arg("is_capturing"), py::arg("encode_tiled"), py::arg("encode_im2col"),
       py::arg("launch_ex") = 0,
       "init(the driver's cuLaunchKernel, cuStreamIsCapturing, cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col and "
       "cuLaunchKernelEx addresses; 0: not there)");
    m.def("set_enabled", [](bool on) { g_enabled.store(on); }, "turn the C++ launches on or off (off: every call "
          "takes its Python fallback)");
    m.def("new_plan", &new_plan, py::arg("f"), py::arg("b"), py::arg("w"), py::arg("shapes"), py::arg("strides"),
          py::arg("dtype"), py::arg("device"), py::arg("channels_last"), py::arg("fwd"), py::arg("bwd"),
          py::arg("fused") = false, py::arg("act") = 0,
          "new_plan(F, B, W recipes or None, [y, dx, dw shapes], [their strides], dtype, device, channels_last, "
          "fwd_fallback, bwd_fallback, fused (the forward takes the bias), act (0 none, 1 ReLU, 2 GELU)) -> plan id");
    m.def("apply", [](const at::Tensor &x, const at::Tensor &w, const at::Tensor &wc,
                      const c10::optional<at::Tensor> &bias, int64_t id, int64_t stream) {
        return conv_apply(x, w, wc, bias_of(plan_of(id), bias), id, stream);
    }, "y = act(conv(x, w) + bias) of plan ``id`` recorded for autograd (wc: w in the computing type; bias: a fused "
       "plan's, else None)");
    m.def("forward", [](const at::Tensor &x, const at::Tensor &wc, const c10::optional<at::Tensor> &bias, int64_t id,
                        int64_t stream) {
        FastPlan &P = plan_of(id);
        return forward_impl(P, x, wc, bias_of(P, bias), stream);
    }, "y = act(conv(x, wc) + bias) of plan ``id`` without autograd (bias: a fused plan's, else None)");
    m.def("new_hot", &new_hot, "a new slot for one module's armed call (-1: no more slots)");
    m.def("free_hot", &free_hot, "free_hot(slot): release a collected module's slot");
    m.def("arm", &arm, "arm(slot, token, gen, plan id, x sizes, x strides, w sizes, w strides, dtype, device, tf32, "
          "deterministic, bias (of x's type; a fused plan's goes into its forward), bias view shape, pinned stream "
          "or -1, autocast, w's dtype, 1-D, x's dtype)");
    m.def("hot", &hot, "hot(slot, token, x, w, bias or None, tf32, deterministic) -> y of the armed call, or None");
    m.def("gen", []() { return g_gen.load(std::memory_order_acquire); }, "the armed calls' generation");
    m.def("bump", []() { g_gen.fetch_add(1, std::memory_order_acq_rel); }, "disarm every armed call");
    m.def("register_ops", &register_ops, py::arg("python"), py::arg("autograd") = py::none(),
          "register the custom ops' CUDA kernels (once per process; False where registered already); python: their "
          "Python path, python(d, a, b, shape, stride, padding, dilation, groups) -> out; autograd: None, or the "
          "three ops' custom_op autograd kernels, f(keyset, *args): then C++ autograd kernels (AutogradCUDA, "
          "AutogradMeta) redispatch the calls that record nothing below autograd and hand the others to f");
    m.def("ops_registered", []() {
        std::lock_guard<std::mutex> g(g_register_mutex);
        return static_cast<bool>(g_ops_lib);
    }, "whether this load of the extension registered the custom ops' CUDA kernels (one library file loaded twice "
       "in a process is one load)");
    m.def("ops_autograd_set_on", [](bool on) { g_ag_on.store(on); }, "turn the C++ autograd kernels' own path on "
          "or off (off: every call to custom_op's Python autograd kernel, as without them)");
    m.def("ops_autograd_stats", []() {
        return std::make_tuple(g_ag_below.load(), g_ag_python.load(), g_ag_on.load(), g_ops_autograd[0] != nullptr);
    }, "(calls redispatched below autograd in C++, calls handed to custom_op's autograd kernel, on, registered)");
    m.def("op_learn", &op_learn, py::arg("d"), py::arg("a"), py::arg("b"), py::arg("shape"), py::arg("stride"),
          py::arg("padding"), py::arg("dilation"), py::arg("groups"), py::arg("id"), py::arg("gen"),
          "learn this call's key (now: its stream, TF32 and determinism) for the one-direction plan id; False where "
          "the table was cleared since gen, the ops are off or the call cannot be keyed");
    m.def("ops_gen", []() { return g_ops_gen.load(); }, "the op table's generation (bumped by each clear)");
    m.def("ops_clear", &ops_clear, "forget every learned op key");
    m.def("ops_set_on", [](bool on) {
        g_ops_on.store(on);
        if (!on) ops_clear();
    }, "turn the op table on or off (off: cleared, every op call through Python)");
    m.def("ops_stats", []() {
        std::lock_guard<std::mutex> g(g_ops_mutex);
        return std::make_tuple(static_cast<int64_t>(g_ops.size()), g_ops_hits.load(), g_ops_misses.load(),
                               g_ops_on.load());
    }, "(keys learned, calls launched from C++, calls through Python, on)");
    m.def("counts", [](int64_t id) {
        FastPlan &P = plan_of(id);
        return std::make_pair(P.fast_calls.load(), P.fallback_calls.load());
    }, "(calls with a launch from C++, calls with a Python fallback) of plan ``id``: a backward whose dx is "
       "launched from C++ and dw through Python counts in both");
}
