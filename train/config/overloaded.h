#pragma once
// Overloaded{lambdas...}: one visitor for std::visit over the config's field variants.
namespace relpos {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace relpos
