// Splitting a batch for the reference executor: when every node treats the images of a batch
// independently, two halves of the batch can run on two threads.
#pragma once

#include <map>
#include <string>

#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"

namespace tessera::host {

// The batch size (dim 0) shared by every graph input, or 0 when there is none.
int64_t common_batch(const Graph& graph, const std::map<std::string, Shape>& shapes);

// Whether image i of every output depends only on image i of the inputs: every activation has
// dim 0 == batch, weights are constants (or computed from constants only) without a batch dim,
// and no node works along axis 0.
bool batch_separable(const Graph& graph, const std::map<std::string, Shape>& shapes, int64_t batch);

// Images [begin, end) of t along dim 0.
Tensor slice_batch(const Tensor& t, int64_t begin, int64_t end);

// a and b stacked along dim 0.
Tensor join_batch(const Tensor& a, const Tensor& b);

}  // namespace tessera::host
