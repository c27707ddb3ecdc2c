#include "accel/program/program.h"

#include <cstring>

namespace tessera {

uint64_t ProgramModel::cycles(uint32_t batch) const {
  uint64_t per_image = 0;
  for (const ModeledLayer& l : layers) per_image += l.cycles;
  return per_image * batch;
}

double ProgramModel::energy_uj(uint32_t batch) const {
  double per_image = 0;
  for (const ModeledLayer& l : layers) per_image += l.energy_uj;
  return per_image * batch;
}

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
