#include <sstream>

#include <hybrid3d/model/EvalSummary.hpp>

namespace hybrid3d {

std::string slashSeparated(const std::vector<double>& values, int precision) {
  std::ostringstream os;
  os.precision(precision);
  for (std::size_t i = 0; i < values.size(); ++i) os << (i ? "/" : "") << values[i];
  return os.str();
}

std::string EvalSummary::describe() const {
  std::ostringstream os;
  os.precision(4);
  os << "loss " << loss;
  if (dice.empty()) {
    os << " mse " << mse << " mae " << mae;
    if (!targetMse.empty()) os << " target mse " << slashSeparated(targetMse, 4);
  } else {
    os << " accuracy " << accuracy << " dice " << slashSeparated(dice, 4);
  }
  return os.str();
}

}  // namespace hybrid3d
