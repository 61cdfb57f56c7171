#pragma once
/// \file
/// The architecture registry (docs/design.md section 2): each architecture is one file,
/// `src/model/architectures/<Name>.cpp`, defining `Architecture hybrid3d::architectures::<Name>()`:
/// its name, its options check, its graph (written once against GraphBuilder, so the same
/// definition builds the layers and plans them), its parameter initialisation and, in its traits,
/// the task it is trained for (Tasks.hpp). The build lists that folder at configure time and
/// generates the call of every such function (src/CMakeLists.txt), so a new file is all a new
/// architecture needs; the deck's choices, the errors and buildModel/planModel read the registry.
/// (A static registrar object per file would not do: the library is a static archive, and the
/// linker drops an object file nobody references, registrar and all.)

#include <optional>
#include <string>
#include <vector>

#include <hybrid3d/model/GraphBuilder.hpp>
#include <hybrid3d/model/Initializers.hpp>
#include <hybrid3d/model/ModelOptions.hpp>

namespace hybrid3d {

struct TaskKind;

/// What an architecture reads and produces, from the options alone: no layer is built.
struct ModelTraits {
  int inputChannels = 0;
  int outputs = 0;                 // regression targets or segmentation classes
  bool log1pOfInput = false;       // the model takes log(1 + x) of its input itself (a layer)
  const TaskKind* task = nullptr;  // what it is trained for: its loss, truth and metrics
};

/// The initial value of one parameter; std::nullopt keeps the layer's own (batch norm's 1, 0).
struct ParameterInit {
  Init kind = Init::Constant;
  double value = 0.0;  // Init::Constant's value
};

struct Architecture {
  std::string name;  // as decks and ModelOptions::architecture spell it
  /// Throws naming the option when the options do not suit the architecture (the input width);
  /// else what it reads and produces.
  ModelTraits (*traits)(const ModelOptions& options) = nullptr;
  /// The layers, in order; the last one added is the model output.
  void (*define)(GraphBuilder& builder, const ModelOptions& options) = nullptr;
  /// The initialiser of parameter `parameter` ("weight", "bias", ...) of layer `layer`, whose
  /// shape has `dims` dimensions (5: a convolution's weight, 2: a dense layer's).
  std::optional<ParameterInit> (*initialization)(const std::string& layer,
                                                 const std::string& parameter,
                                                 std::size_t dims) = nullptr;
};

/// Adds an architecture besides those of src/model/architectures/ (tests, programs built on the
/// library). Throws when the name is taken or a function is missing.
void registerArchitecture(const Architecture& architecture);
/// The registered architecture of that name; throws listing the registered names.
const Architecture& findArchitecture(const std::string& name);
/// Every registered name, sorted.
std::vector<std::string> architectureNames();

/// The architecture's traits after its options check, and the batch's: the checks buildModel,
/// planModel (ModelPlan.hpp) and a dry run share. Throws naming the option.
ModelTraits modelTraits(const ModelOptions& options);

}  // namespace hybrid3d
