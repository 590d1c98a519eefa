// What the kernel offers, remembered for its boot in a file: present features are not
// probed again; refusals, another boot's file or someone else's file are not believed.
#include "runtime/remembered_features.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "host/cache_directory.h"

namespace kq::runtime {
namespace {

namespace fs = std::filesystem;

/// Counts its probes; offers everything but kprobes.
class CountingKernel : public KernelFeatures {
 public:
  explicit CountingKernel(std::map<std::string, int>& probes) : probes_(probes) {}
  std::optional<std::string> missing(plan::Feature feature) override {
    ++probes_[featureName(feature)];
    if (feature == plan::Feature::Kprobe) return std::string("no kprobes here");
    return std::nullopt;
  }
  std::optional<std::string> missing(Helper helper, HelperUse use) override {
    ++probes_["helper"];
    return std::nullopt;
  }

 private:
  std::map<std::string, int>& probes_;
};

class RememberedFeaturesTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kq-features-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    file_ = dir_ / "kq" / "kernel-features";
  }
  void TearDown() override { fs::remove_all(dir_); }

  RememberedFeatures session() { return RememberedFeatures(std::make_unique<CountingKernel>(probes_), file_); }

  fs::path dir_, file_;
  std::map<std::string, int> probes_;
};

TEST_F(RememberedFeaturesTest, WhatIsPresentIsProbedOncePerBoot) {
  {
    RememberedFeatures first = session();
    EXPECT_FALSE(first.missing(plan::Feature::Tracepoint));
    EXPECT_FALSE(first.missing(plan::Feature::Tracepoint));
    EXPECT_FALSE(first.missing(Helper::FuncIp, HelperUse::Kprobe));
  }
  EXPECT_EQ(probes_["tracepoint"], 1);
  RememberedFeatures second = session();
  EXPECT_FALSE(second.missing(plan::Feature::Tracepoint));
  EXPECT_FALSE(second.missing(Helper::FuncIp, HelperUse::Kprobe));
  EXPECT_EQ(probes_["tracepoint"], 1);
  EXPECT_EQ(probes_["helper"], 1);
  EXPECT_FALSE(second.missing(plan::Feature::PerfEvent));  // not asked before: probed
  EXPECT_EQ(probes_["perf_event"], 1);
}

TEST_F(RememberedFeaturesTest, ARefusalIsAskedAgain) {
  EXPECT_EQ(session().missing(plan::Feature::Kprobe), "no kprobes here");
  EXPECT_EQ(session().missing(plan::Feature::Kprobe), "no kprobes here");
  EXPECT_EQ(probes_["kprobe"], 2);
}

TEST_F(RememberedFeaturesTest, AnotherBootsFileIsNotBelieved) {
  EXPECT_FALSE(session().missing(plan::Feature::Tracepoint));
  std::ifstream in(file_);
  std::string header, boot, rest;
  std::getline(in, header);
  std::getline(in, boot);
  EXPECT_EQ(boot, "boot " + host::bootId());
  std::getline(in, rest, '\0');
  in.close();
  std::ofstream(file_) << header << "\nboot another-boot\n" << rest;
  EXPECT_FALSE(session().missing(plan::Feature::Tracepoint));
  EXPECT_EQ(probes_["tracepoint"], 2);
}

TEST_F(RememberedFeaturesTest, AFileOthersMayWriteIsNotBelieved) {
  EXPECT_FALSE(session().missing(plan::Feature::Tracepoint));
  chmod(file_.c_str(), 0666);
  EXPECT_FALSE(session().missing(plan::Feature::Tracepoint));
  EXPECT_EQ(probes_["tracepoint"], 2);
}

TEST_F(RememberedFeaturesTest, WithoutAFileEveryProcessProbes) {
  file_.clear();
  EXPECT_FALSE(session().missing(plan::Feature::Tracepoint));
  EXPECT_FALSE(session().missing(plan::Feature::Tracepoint));
  EXPECT_EQ(probes_["tracepoint"], 2);
}

}  // namespace
}  // namespace kq::runtime
