#include <sstream>

#include <hybrid3d/model/EvalSummary.hpp>

namespace hybrid3d {

std::string EvalSummary::describe() const {
  std::ostringstream os;
  os.precision(4);
  os << "loss " << loss;
  if (dice.empty()) {
    os << " mse " << mse << " mae " << mae;
  } else {
    os << " accuracy " << accuracy << " dice";
    for (std::size_t c = 0; c < dice.size(); ++c) os << (c ? "/" : " ") << dice[c];
  }
  return os.str();
}

}  // namespace hybrid3d
