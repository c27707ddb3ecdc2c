// The shape rules' shared wording (op_shapes.cc, tensor_op_shapes.cc): an invalid-argument status,
// a shape as text, a shape's rank as an int.
#pragma once

#include <string>
#include <utility>

#include "accel/common/status.h"
#include "accel/graph/tensor.h"

namespace tessera::shape_messages {

inline Status invalid(std::string message) { return Status::invalid_argument(std::move(message)); }

inline std::string str(const Shape& s) { return shape_to_string(s); }

inline int rank_of(const Shape& s) { return static_cast<int>(s.size()); }

}  // namespace tessera::shape_messages
