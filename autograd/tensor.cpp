#include "autograd/tensor.h"

#include <fmt/format.h>

#include <charconv>

#include "autograd/backend.h"
#include "autograd/error.h"
#include "autograd/tape.h"

namespace relpos {

namespace {

// Hand-written rather than fmt::join: ops build shape strings for their error
// messages eagerly (as require() arguments), so this sits on every op's path.
void append_shape(std::string& text, const Shape& shape) {
  text += '[';
  char digits[24];
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    const auto end = std::to_chars(digits, digits + sizeof digits, shape[i]).ptr;
    text.append(digits, end);
  }
  text += ']';
}

}  // namespace

std::string to_string(const Shape& shape) {
  std::string text;
  append_shape(text, shape);
  return text;
}

std::int64_t numel_of(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t s : shape) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (std::int64_t s : shape)
    if (s < 0) fail("Tensor::empty: negative size in shape {}", to_string(shape));
  auto impl = std::make_shared<TensorImpl>();
  const auto bytes = static_cast<std::size_t>(numel_of(shape)) * element_size(dtype);
  impl->storage = std::make_shared<Storage>(bytes, device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  backend_for(device).fill(t, value);
  return t;
}

Tensor Tensor::from_data(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (!(static_cast<std::int64_t>(values.size()) == numel_of(shape)))
    fail("Tensor::from_data: {} values for shape {}", values.size(), to_string(shape));
  Tensor source = empty(shape, DType::f64);
  std::copy(values.begin(), values.end(), source.data<double>());
  return dtype == DType::f64 ? source : source.to(dtype);
}

Tensor Tensor::from_data(const std::vector<float>& values, const Shape& shape) {
  if (!(static_cast<std::int64_t>(values.size()) == numel_of(shape)))
    fail("Tensor::from_data: {} values for shape {}", values.size(), to_string(shape));
  Tensor t = empty(shape, DType::f32);
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

Tensor Tensor::view_of(const Tensor& base, Shape shape, Shape strides, std::int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

const Shape& Tensor::shape() const { return impl_->shape; }
const Shape& Tensor::strides() const { return impl_->strides; }
std::int64_t Tensor::offset() const { return impl_->offset; }
DType Tensor::dtype() const { return impl_->dtype; }
Device Tensor::device() const { return impl_->storage->device(); }
const std::shared_ptr<Storage>& Tensor::storage() const { return impl_->storage; }

std::int64_t Tensor::size(std::int64_t axis) const {
  const std::int64_t d = dim();
  const std::int64_t a = axis < 0 ? axis + d : axis;
  if (a < 0 || a >= d) fail("size(): axis {} out of range for shape {}", axis, to_string(shape()));
  return shape()[a];
}

bool Tensor::is_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t i = shape().size(); i-- > 0;) {
    if (shape()[i] == 1) continue;
    if (strides()[i] != expected) return false;
    expected *= shape()[i];
  }
  return true;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  std::string text(name_of(dtype()));
  append_shape(text, shape());
  text += ' ';
  text += name_of(device());
  return text;
}

void* Tensor::raw_data() const {
  return static_cast<char*>(impl_->storage->data()) +
         impl_->offset * static_cast<std::int64_t>(element_size(dtype()));
}

void Tensor::check_access(DType requested) const {
  if (requested != dtype())
    throw InternalError(
        fmt::format("data<{}>() on a tensor of dtype {}", name_of(requested), name_of(dtype())));
}

double Tensor::item() const {
  if (numel() != 1) fail("item(): tensor {} has {} elements, not 1", describe(), numel());
  return to_vector()[0];
}

std::vector<double> Tensor::to_vector() const {
  Tensor host = to(Device::cpu).to(DType::f64).contiguous();
  const double* p = host.data<double>();
  return std::vector<double>(p, p + host.numel());
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  backend_of(out).copy(out, *this);
  return out;
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  Tensor out = empty(shape(), dtype(), target);
  // The device backend performs host<->device transfers in either direction.
  backend_for(target == Device::cpu ? device() : target).copy(out, *this);
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor out = empty(shape(), target, device());
  backend_of(out).copy(out, *this);
  return out;
}

Tensor Tensor::detach() const { return view_of(*this, shape(), strides(), offset()); }

namespace {
void check_inplace_allowed(const Tensor& t, const char* what) {
  if (grad_enabled() && t.requires_grad())
    fail("{}: in-place write to {}, which requires grad, outside a NoGradGuard", what,
         t.describe());
}
}  // namespace

Tensor& Tensor::fill_(double value) {
  check_inplace_allowed(*this, "fill_");
  if (is_contiguous()) {
    backend_of(*this).fill(*this, value);
  } else {
    backend_of(*this).copy(*this, full(shape(), value, dtype(), device()));
  }
  bump_version();
  return *this;
}

Tensor& Tensor::copy_(const Tensor& source) {
  check_inplace_allowed(*this, "copy_");
  if (source.shape() != shape())
    fail("copy_: source shape {} does not match destination shape {}", to_string(source.shape()),
         to_string(shape()));
  backend_for(device() == Device::cpu ? source.device() : device()).copy(*this, source);
  bump_version();
  return *this;
}

std::uint64_t Tensor::version() const { return impl_->storage->version(); }
void Tensor::bump_version() const { impl_->storage->bump_version(); }

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool value) {
  if (!is_leaf())
    fail("set_requires_grad: {} is the output of an op; only leaves can be changed", describe());
  if (value && !is_floating(dtype()))
    fail("set_requires_grad: {} is not a floating tensor", describe());
  impl_->requires_grad = value;
  return *this;
}

bool Tensor::is_leaf() const { return impl_->tape_slot < 0; }
Tensor Tensor::grad() const { return impl_->grad; }
void Tensor::set_grad(const Tensor& grad) const { impl_->grad = grad; }
void Tensor::zero_grad() const { impl_->grad = Tensor(); }

}  // namespace relpos
