#include "accel/device/program.h"

#include <cstring>

namespace tessera {

std::vector<uint32_t> CompiledProgram::program_words(uint32_t batch) const {
  std::vector<uint32_t> words(abi::kHeaderWords + layers.size() * abi::kLayerWords);
  abi::ProgramHeader h = header;
  h.magic = abi::kProgramMagic;
  h.version = abi::kAbiVersion;
  h.layer_count = static_cast<uint32_t>(layers.size());
  h.batch = batch;
  std::memcpy(words.data(), &h, sizeof(h));
  if (!layers.empty()) {
    std::memcpy(words.data() + abi::kHeaderWords, layers.data(), layers.size() * sizeof(abi::LayerDesc));
  }
  return words;
}

}  // namespace tessera
