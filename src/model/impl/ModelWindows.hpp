#pragma once
// The fixed windows of the architectures' pools and up-convolutions (docs/design.md section 6),
// named once for both builders (Builder constructs the layers, PlanBuilder records shapes).

namespace hybrid3d::Impl {

struct CubicWindow {
  int kernel, stride, padding;
};
constexpr CubicWindow avgPoolWindow{3, 2, 1};  // CosmoFlow: padding counted
constexpr CubicWindow maxPoolWindow{2, 2, 0};
constexpr CubicWindow upWindow{2, 2, 0};  // U-Net's transposed convolutions, no bias

}  // namespace hybrid3d::Impl
