// A main for fuzz targets built without libFuzzer (GCC): runs every file of a corpus, then
// random mutations of them (flips, insertions, deletions, splices; fixed seed) for a bounded
// number of seconds. A crash ends the process, which fails the ctest entry.
//
// Usage: fuzz_TARGET CORPUS_DIR [SECONDS]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

std::vector<Bytes> readCorpus(const std::filesystem::path& dir) {
  std::vector<Bytes> corpus;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return corpus;
}

Bytes mutate(const std::vector<Bytes>& corpus, std::mt19937& rng) {
  Bytes input = corpus[rng() % corpus.size()];
  for (int edits = 1 + rng() % 4; edits > 0; --edits) {
    size_t at = input.empty() ? 0 : rng() % input.size();
    switch (rng() % 4) {
      case 0: if (!input.empty()) input[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      case 1: input.insert(input.begin() + at, static_cast<uint8_t>(rng())); break;
      case 2: if (!input.empty()) input.erase(input.begin() + at); break;
      default: {  // a piece of another input
        const Bytes& other = corpus[rng() % corpus.size()];
        if (other.empty()) break;
        size_t from = rng() % other.size(), len = 1 + rng() % std::min<size_t>(32, other.size() - from);
        input.insert(input.begin() + at, other.begin() + from, other.begin() + from + len);
      }
    }
  }
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [SECONDS]\n", argv[0]);
    return 2;
  }
  std::vector<Bytes> corpus = readCorpus(argv[1]);
  double seconds = argc > 2 ? std::atof(argv[2]) : 0;
  for (const Bytes& input : corpus) LLVMFuzzerTestOneInput(input.data(), input.size());
  std::mt19937 rng(12345);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  size_t runs = 0;
  while (!corpus.empty() && std::chrono::steady_clock::now() < end) {
    Bytes input = mutate(corpus, rng);
    LLVMFuzzerTestOneInput(input.data(), input.size());
    ++runs;
  }
  std::printf("%zu corpus inputs and %zu mutations ran\n", corpus.size(), runs);
  return 0;
}
