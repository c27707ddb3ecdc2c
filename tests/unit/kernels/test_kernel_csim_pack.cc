// The HLS kernel's packed int8 multiplication (kernels/accel_pack.h, Xilinx WP486): one 27 x 18
// product yields two int8 x int8 products. Checked against two plain products for every one of the
// 2^24 (x_hi, x_lo, s) int8 triples, and the packed operand and product against the DSP48E2's port
// widths (27-bit pre-adder output, 45-bit product). A control shows the check catches the
// classic mistake (the upper field without the low field's sign correction).
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/accel_pack.h"

namespace tessera {
namespace {

using kernel::mul_pair;
using kernel::ProductPair;

bool fits_signed(int64_t v, int bits) { return v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1)); }

TEST(KernelPack, EveryInt8TripleGivesBothProductsExactly) {
  uint64_t wrong = 0, checked = 0;
  int first_hi = 0, first_lo = 0, first_s = 0;
  for (int s = -128; s <= 127; ++s) {
    for (int hi = -128; hi <= 127; ++hi) {
      for (int lo = -128; lo <= 127; ++lo) {
        const ProductPair pr = mul_pair(static_cast<int8_t>(hi), static_cast<int8_t>(lo), static_cast<int8_t>(s));
        const bool ok = pr.hi == hi * s && pr.lo == lo * s;
        if (!ok && wrong++ == 0) first_hi = hi, first_lo = lo, first_s = s;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, uint64_t{1} << 24);
  EXPECT_EQ(wrong, 0u) << "first wrong triple: x_hi " << first_hi << ", x_lo " << first_lo << ", s " << first_s;
}

// The packed operand fits the DSP48E2's 27-bit pre-adder output and the product its 45 bits
// (checked at the extremes, where |x_hi|, |x_lo| and |s| are largest).
TEST(KernelPack, OperandsFitTheDsp48e2Ports) {
  for (int hi : {-128, -1, 0, 1, 127}) {
    for (int lo : {-128, -1, 0, 1, 127}) {
      const int64_t packed = int64_t{hi} * kernel::kPackScale + lo;
      EXPECT_TRUE(fits_signed(packed, 27)) << hi << " " << lo;
      for (int s : {-128, 127}) EXPECT_TRUE(fits_signed(packed * s, 45)) << hi << " " << lo << " " << s;
    }
  }
}

// Without the correction the upper field is one short exactly where the low product is negative:
// the exhaustive comparison above is able to fail.
TEST(KernelPack, UncorrectedUpperFieldIsWrongWhereTheLowProductIsNegative) {
  uint64_t wrong = 0, negative = 0;
  for (int s = -128; s <= 127; ++s) {
    for (int hi = -128; hi <= 127; ++hi) {
      for (int lo = -128; lo <= 127; ++lo) {
        const int64_t p = (int64_t{hi} * kernel::kPackScale + lo) * s;
        const int64_t naive_hi = p >> kernel::kPackShift;
        wrong += naive_hi != hi * s ? 1 : 0;
        negative += lo * s < 0 ? 1 : 0;
      }
    }
  }
  EXPECT_GT(wrong, 0u);
  EXPECT_EQ(wrong, negative);
}

}  // namespace
}  // namespace tessera
