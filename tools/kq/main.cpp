#include <unistd.h>

#include <iostream>

#include "tools/kq/cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  kq::cli::Io io{std::cout, std::cerr, kq::cli::readFileFromDisk, isatty(STDERR_FILENO) == 1,
                 kq::cli::loadKernelEnvironment};
  int status = kq::cli::run(std::vector<std::string>(argv + 1, argv + argc), io);
  std::cout.flush();
  return status;
}
