#include <torch/extension.h>
#include <torch/csrc/autograd/custom_function.h>
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
struct Mul2 : public torch::autograd::Function<Mul2> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, int64_t s) {
    ctx->saved_data["s"] = s;
    return at::empty_strided(x.sizes(), x.strides(), x.options());
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0], torch::Tensor()};
  }
};
torch::Tensor mul2(torch::Tensor x, int64_t s) { return Mul2::apply(x, s); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("mul2", &mul2); }
